//! A log file rotated by size (upstream rotates `--audit-log-path` with lumberjack; this is a
//! small rewrite of the same behaviour): when a write would take the file past `max_size`, the
//! file is renamed to `<name>-<UTC time>.<ext>` (`audit-2026-01-02T15-04-05.000.log`) and a
//! new one started; the oldest backups beyond `max_backups` and those older than `max_age`
//! are removed.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// lumberjack's size limit when none is given (100 MB).
const DEFAULT_MAX_SIZE: u64 = 100 * 1024 * 1024;

/// A file written in append mode and rotated by size.
pub struct RotatingFile {
    path: PathBuf,
    max_size: u64,
    max_backups: usize,
    max_age: Option<Duration>,
    file: File,
    size: u64,
}

impl RotatingFile {
    /// Opens (creating it and its directory if needed) the file at `path`. `max_size_mb` 0
    /// means 100 MB; `max_backups` 0 keeps every backup; `max_age_days` 0 keeps backups of
    /// any age.
    pub fn open(
        path: &Path,
        max_size_mb: u64,
        max_backups: usize,
        max_age_days: u64,
    ) -> io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::fs::create_private_dir_all(dir)?;
        }
        let file = open_append(path)?;
        let size = file.metadata()?.len();
        Ok(RotatingFile {
            path: path.to_path_buf(),
            max_size: if max_size_mb == 0 {
                DEFAULT_MAX_SIZE
            } else {
                max_size_mb.saturating_mul(1024 * 1024)
            },
            max_backups,
            max_age: (max_age_days > 0).then(|| Duration::from_secs(max_age_days * 24 * 3600)),
            file,
            size,
        })
    }

    fn rotate(&mut self) -> io::Result<()> {
        let backup = self.backup_name(jiff::Timestamp::now());
        std::fs::rename(&self.path, &backup)?;
        self.file = open_append(&self.path)?;
        self.size = 0;
        self.remove_old_backups()
    }

    fn name_parts(&self) -> (String, String) {
        let file = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match file.rfind('.') {
            Some(i) if i > 0 => (file[..i].to_string(), file[i..].to_string()),
            _ => (file, String::new()),
        }
    }

    fn backup_name(&self, now: jiff::Timestamp) -> PathBuf {
        let (stem, ext) = self.name_parts();
        let stamp = now.strftime("%Y-%m-%dT%H-%M-%S%.3f").to_string();
        let mut candidate = self.path.with_file_name(format!("{stem}-{stamp}{ext}"));
        // Two rotations within one millisecond must not overwrite each other.
        let mut n = 1;
        while candidate.exists() {
            candidate = self.path.with_file_name(format!("{stem}-{stamp}-{n}{ext}"));
            n += 1;
        }
        candidate
    }

    /// The backups of this file, newest first.
    pub fn backups(&self) -> io::Result<Vec<PathBuf>> {
        let (stem, ext) = self.name_parts();
        let prefix = format!("{stem}-");
        let dir = match self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(d) => d.to_path_buf(),
            None => PathBuf::from("."),
        };
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(&prefix) && name.ends_with(&ext) && entry.path() != self.path {
                found.push(entry.path());
            }
        }
        // The time stamp sorts as text.
        found.sort();
        found.reverse();
        Ok(found)
    }

    fn remove_old_backups(&self) -> io::Result<()> {
        let backups = self.backups()?;
        let now = SystemTime::now();
        for (i, path) in backups.iter().enumerate() {
            let too_many = self.max_backups > 0 && i >= self.max_backups;
            let too_old = self.max_age.is_some_and(|age| {
                std::fs::metadata(path)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| now.duration_since(t).ok())
                    .is_some_and(|d| d > age)
            });
            if too_many || too_old {
                std::fs::remove_file(path)?;
            }
        }
        Ok(())
    }
}

/// Audit events may hold request details: the log is created readable by its owner only,
/// as upstream's.
fn open_append(path: &Path) -> io::Result<File> {
    crate::fs::open_append(path, crate::fs::PRIVATE_FILE)
}

impl Write for RotatingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.size > 0 && self.size + buf.len() as u64 > self.max_size {
            self.rotate()?;
        }
        let n = self.file.write(buf)?;
        self.size += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_by_size_and_keeps_max_backups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let mut f = RotatingFile::open(&path, 1, 2, 0).unwrap();
        let line = vec![b'x'; 400 * 1024];
        for _ in 0..10 {
            f.write_all(&line).unwrap();
        }
        let backups = f.backups().unwrap();
        assert_eq!(backups.len(), 2, "{backups:?}");
        for b in &backups {
            let name = b.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                name.starts_with("audit-") && name.ends_with(".log"),
                "{name}"
            );
            assert_eq!(std::fs::metadata(b).unwrap().len(), 800 * 1024);
        }
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 800 * 1024);
    }
}
