//! A size-limited filesystem for the embedded store: a tmpfs mounted on a directory of the run
//! (which needs root and a machine that lets it mount), filled to the last byte for the
//! full-disk fault and emptied again. Unmounted when dropped.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A mounted tmpfs.
pub struct Tmpfs {
    dir: PathBuf,
    filler: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` bytes on `dir` (created if missing); an error says why it cannot.
    pub fn mount(dir: &Path, size: u64) -> Result<Tmpfs, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| format!("running mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mount -t tmpfs -o size={size} on {} failed ({}): {}",
                dir.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Tmpfs {
            dir: dir.to_path_buf(),
            filler: dir.join("filler"),
        })
    }

    /// The mounted directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Fills the filesystem until a write fails with "no space left"; returns the bytes written.
    pub fn fill(&self) -> Result<u64, String> {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.filler)
            .map_err(|e| format!("{}: {e}", self.filler.display()))?;
        let chunk = vec![0xa5u8; 64 * 1024];
        let mut written = 0u64;
        loop {
            match f.write(&chunk) {
                Ok(0) => return Ok(written),
                Ok(n) => written += n as u64,
                Err(e) if e.raw_os_error() == Some(28) => return Ok(written),
                Err(e) => return Err(format!("filling {}: {e}", self.dir.display())),
            }
        }
    }

    /// Frees what [`fill`](Self::fill) took.
    pub fn free(&self) -> Result<(), String> {
        match std::fs::remove_file(&self.filler) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(format!("{}: {e}", self.filler.display())),
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = self.free();
        // Lazily: a process still holding a file there must not keep it mounted.
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}
