//! # apiserver-files
//!
//! The files and directories the server creates (certificates and keys, kubeconfigs, the
//! development host's token file, the embedded store, the audit log), each created with its
//! final mode: never written first and restricted afterwards, which would leave a moment in
//! which others may open it; and the certificates of PEM bundles ([`pem`]).
//!
//! Whole files are written atomically: to a new temporary file of a random name in the same
//! directory (created exclusively, `O_EXCL`, with the final mode, by the `tempfile` crate),
//! then renamed over the final path. A symbolic link planted at the final path is replaced,
//! never followed, and no temporary name can be guessed in advance.
//!
//! On platforms without Unix modes the modes are ignored.
//!
//! The ground floor of `apiserver-framework` (which knows it as `fs`) and of its storage crate,
//! `apiserver-storage`; it depends on neither.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

pub mod pem;

/// The mode of files only their owner may read and write (keys, credentials, data, logs).
pub const PRIVATE_FILE: u32 = 0o600;
/// The mode of files anyone may read (certificates).
pub const PUBLIC_FILE: u32 = 0o644;
/// The mode of directories only their owner may enter (those holding keys or data).
pub const PRIVATE_DIR: u32 = 0o700;

/// Creates `dir` and any missing parent, each directory created with mode `0700` (existing
/// ones are left as they are).
pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    if dir.as_os_str().is_empty() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(PRIVATE_DIR);
    }
    builder.create(dir)
}

/// Replaces the file at `path` with `contents`, atomically: the file is written under a
/// random temporary name beside it, created with `mode`, synced, then renamed to `path`. The
/// directory is created (mode `0700`) when missing.
pub fn write_atomically(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    create_private_dir_all(dir)?;
    let mut builder = tempfile::Builder::new();
    let prefix = format!(
        ".{}.",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    );
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(mode));
    }
    #[cfg(not(unix))]
    let _ = mode;
    // Removed on drop if anything below fails.
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(contents)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Opens `path` for appending, creating it with `mode` if missing (an existing file keeps its
/// mode).
pub fn open_append(path: &Path, mode: u32) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    set_mode(&mut options, mode);
    options.open(path)
}

/// Opens `path` for reading and writing without truncating it, creating it with `mode` if
/// missing (an existing file keeps its mode).
pub fn open_read_write(path: &Path, mode: u32) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    set_mode(&mut options, mode);
    options.open(path)
}

fn set_mode(options: &mut OpenOptions, mode: u32) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = (options, mode);
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    }

    #[test]
    fn directories_are_created_private() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b/c");
        create_private_dir_all(&dir).unwrap();
        for d in ["a", "a/b", "a/b/c"] {
            assert_eq!(mode(&root.path().join(d)), PRIVATE_DIR, "{d}");
        }
        // Existing directories keep their mode.
        let open = root.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        create_private_dir_all(&open.join("inner")).unwrap();
        assert_eq!(mode(&open), 0o755);
        assert_eq!(mode(&open.join("inner")), PRIVATE_DIR);
    }

    #[test]
    fn files_are_written_with_their_mode_and_nothing_is_left_behind() {
        let root = tempfile::tempdir().unwrap();
        let key = root.path().join("keys/server.key");
        write_atomically(&key, b"secret", PRIVATE_FILE).unwrap();
        assert_eq!(std::fs::read(&key).unwrap(), b"secret");
        assert_eq!(mode(&key), PRIVATE_FILE);
        assert_eq!(mode(&root.path().join("keys")), PRIVATE_DIR);
        let cert = root.path().join("keys/server.crt");
        write_atomically(&cert, b"public", PUBLIC_FILE).unwrap();
        assert_eq!(mode(&cert) & 0o600, 0o600);
        assert_eq!(mode(&cert) & 0o022, 0);
        // Replacing keeps the new mode.
        write_atomically(&key, b"rotated", PRIVATE_FILE).unwrap();
        assert_eq!(std::fs::read(&key).unwrap(), b"rotated");
        let names: Vec<String> = std::fs::read_dir(root.path().join("keys"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn a_symlink_at_the_final_path_is_replaced_not_followed() {
        let root = tempfile::tempdir().unwrap();
        let victim = root.path().join("victim");
        std::fs::write(&victim, "untouched").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
        let path = root.path().join("app.kubeconfig");
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        write_atomically(&path, b"token", PRIVATE_FILE).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
        assert_eq!(mode(&victim), 0o644);
        assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
        assert_eq!(std::fs::read(&path).unwrap(), b"token");
        assert_eq!(mode(&path), PRIVATE_FILE);
    }

    #[test]
    fn symlinks_at_the_old_predictable_temporary_names_are_not_followed() {
        let root = tempfile::tempdir().unwrap();
        let victim = root.path().join("victim");
        std::fs::write(&victim, "untouched").unwrap();
        let path = root.path().join("app.kubeconfig");
        for name in ["app.tmp", "app.kubeconfig.tmp", ".app.kubeconfig.tmp"] {
            std::os::unix::fs::symlink(&victim, root.path().join(name)).unwrap();
        }
        write_atomically(&path, b"token", PRIVATE_FILE).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
        assert_eq!(std::fs::read(&path).unwrap(), b"token");
    }

    #[test]
    fn opened_files_are_created_with_their_mode() {
        let root = tempfile::tempdir().unwrap();
        let log = root.path().join("audit.log");
        open_append(&log, PRIVATE_FILE)
            .unwrap()
            .write_all(b"x")
            .unwrap();
        assert_eq!(mode(&log), PRIVATE_FILE);
        let data = root.path().join("store");
        open_read_write(&data, PRIVATE_FILE).unwrap();
        assert_eq!(mode(&data), PRIVATE_FILE);
        // An existing file is neither truncated nor changed in mode.
        open_append(&log, 0o644).unwrap();
        assert_eq!(std::fs::read(&log).unwrap(), b"x");
        assert_eq!(mode(&log), PRIVATE_FILE);
    }
}
