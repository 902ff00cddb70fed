//! Reading a host-read file (SKILL.md, a skill's files, a role file, AGENTS.md) from a folder a
//! repository controls (issue 13 item 7): only a regular file, only beneath its root (symlinks
//! followed only while they stay inside, through a folder handle: cap-std, `openat2
//! (RESOLVE_BENEATH)` on Linux), and at most `cap + 1` bytes read whatever the metadata says. So
//! a link to `/proc/self/environ`, `/dev/zero` or a file of the user's is refused, not read.

use std::io::Read;
use std::path::{Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};
use cst_protocol::{Diagnostic, DiagnosticKind};

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum BoundedReadError {
    #[error("not found")]
    NotFound,
    #[error("refused: it is not a regular file inside {root} ({reason})")]
    Refused { root: String, reason: String },
    #[error("refused: larger than {cap} bytes")]
    TooLarge { cap: u64 },
    #[error("cannot read: {0}")]
    Io(std::io::Error),
}

/// What was read: the bytes and whether the file went on past the cap (only with `cut`).
pub struct Bounded {
    pub bytes: Vec<u8>,
    pub cut: bool,
}

impl Bounded {
    /// The text, invalid UTF-8 replaced (a cut in a character included).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// Read `rel` beneath `root`: a regular file inside `root`, at most `cap` bytes. Over the cap:
/// with `cut`, the first `cap` bytes and `cut: true`; without, [`BoundedReadError::TooLarge`].
pub fn read_beneath(root: &Path, rel: &Path, cap: u64, cut: bool) -> Result<Bounded, BoundedReadError> {
    let refused = |reason: String| BoundedReadError::Refused {
        root: root.display().to_string(),
        reason,
    };
    let dir = Dir::open_ambient_dir(root, ambient_authority()).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => BoundedReadError::NotFound,
        _ => BoundedReadError::Io(e),
    })?;
    let mut opts = OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        // A FIFO must not block the open (it is refused below).
        use cap_std::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let file = dir.open_with(rel, &opts).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => BoundedReadError::NotFound,
        // cap-std's answer to a path or symlink leading outside the folder.
        std::io::ErrorKind::PermissionDenied => refused(e.to_string()),
        _ => BoundedReadError::Io(e),
    })?;
    let meta = file.metadata().map_err(BoundedReadError::Io)?;
    if !meta.is_file() {
        let kind = if meta.is_dir() {
            "a folder"
        } else {
            "a device, FIFO or socket"
        };
        return Err(refused(kind.to_string()));
    }
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(BoundedReadError::Io)?;
    if bytes.len() as u64 > cap {
        if !cut {
            return Err(BoundedReadError::TooLarge { cap });
        }
        bytes.truncate(cap as usize);
        return Ok(Bounded { bytes, cut: true });
    }
    Ok(Bounded { bytes, cut: false })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn refuses_links_out_devices_and_big_files() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::write(r.join("ok.md"), "fine").unwrap();
        std::os::unix::fs::symlink("/proc/self/environ", r.join("env.md")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", r.join("zero.md")).unwrap();
        std::os::unix::fs::symlink("ok.md", r.join("inside.md")).unwrap();
        std::fs::write(r.join("big.md"), "x".repeat(100)).unwrap();
        assert_eq!(read_beneath(r, Path::new("ok.md"), 10, false).unwrap().text(), "fine");
        assert_eq!(
            read_beneath(r, Path::new("inside.md"), 10, false).unwrap().text(),
            "fine"
        );
        for name in ["env.md", "zero.md"] {
            let e = read_beneath(r, Path::new(name), 10, false).err().unwrap();
            assert!(matches!(e, BoundedReadError::Refused { .. }), "{name}: {e}");
        }
        assert!(matches!(
            read_beneath(r, Path::new("big.md"), 10, false),
            Err(BoundedReadError::TooLarge { cap: 10 })
        ));
        let b = read_beneath(r, Path::new("big.md"), 10, true).unwrap();
        assert!(b.cut && b.bytes.len() == 10);
        assert!(matches!(
            read_beneath(r, Path::new("none.md"), 10, false),
            Err(BoundedReadError::NotFound)
        ));
    }
}

/// The `*.md` files of `dir`, sorted by name, each read with [`read_beneath`] (at most `cap`
/// bytes); one that is refused is a warning naming it, `{what} file …; the {what} is not
/// loaded`, and is left out (role files, a plugin's slash commands).
pub fn read_md_files(dir: &Path, cap: u64, what: &str, warnings: &mut Vec<Diagnostic>) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for file in cst_config::sorted_md_files(dir) {
        let name = file.file_name().map(PathBuf::from).unwrap_or_default();
        match read_beneath(dir, &name, cap, false) {
            Ok(b) => out.push((file, b.text())),
            Err(e) => warnings.push(Diagnostic::in_file(
                DiagnosticKind::BrokenFile,
                &file,
                format!("{what} file {e}; the {what} is not loaded"),
            )),
        }
    }
    out
}
