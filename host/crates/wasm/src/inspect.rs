//! What a `.wasm` file is: the header says core module or component (checked before compiling),
//! and a compiled component's exports say which version of `cst:plugin/tool` it was built for
//! (checked before instantiating).

use std::path::Path;

use wasmtime::component::Component;
use wasmtime::Engine;

/// The WIT package this host speaks.
pub const WORLD_PACKAGE: &str = "cst:plugin";
/// Its version (`wit/v0.1.0/plugin.wit`).
pub const WORLD_VERSION: &str = "0.1.0";

const TOOL_EXPORT_PREFIX: &str = "cst:plugin/tool@";

/// Read a `.wasm` file of at most `max` bytes. The size is checked before reading, and only a
/// regular file is opened (a FIFO or a device could block or never end); the read itself stops
/// after `max + 1` bytes in case the file grows meanwhile.
pub fn read_limited(file: &Path, max: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let f = file.display();
    let meta = std::fs::metadata(file).map_err(|e| format!("{f}: cannot read: {e}"))?;
    let too_large = |len: u64| format!("{f}: too large ({len} bytes; at most {max} bytes are read)");
    if !meta.is_file() {
        return Err(format!("{f}: not a regular file"));
    }
    if meta.len() > max {
        return Err(too_large(meta.len()));
    }
    let file_handle = std::fs::File::open(file).map_err(|e| format!("{f}: cannot read: {e}"))?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file_handle
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{f}: cannot read: {e}"))?;
    if bytes.len() as u64 > max {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Check the 8-byte header: refuse core modules and anything that is not wasm, before compiling.
pub fn check_header(file: &Path, bytes: &[u8]) -> Result<(), String> {
    let f = file.display();
    if bytes.len() < 8 {
        return Err(format!(
            "{f}: truncated or not a wasm file ({} bytes; a component starts with an 8-byte header)",
            bytes.len()
        ));
    }
    if &bytes[..4] != b"\0asm" {
        return Err(format!("{f}: not a wasm file (no `\\0asm` magic)"));
    }
    match &bytes[4..8] {
        [0x0d, 0x00, 0x01, 0x00] => Ok(()),
        [0x01, 0x00, 0x00, 0x00] => Err(format!(
            "{f}: a core wasm module, not a component; build it for wasm32-wasip2 (cargo build --target wasm32-wasip2) \
             or wrap it with `wasm-tools component new`"
        )),
        other => Err(format!(
            "{f}: unknown wasm version/layer {other:02x?}; expected a component (0d 00 01 00)"
        )),
    }
}

/// The `cst:plugin/tool` version the component exports; refuses another world or an
/// incompatible version, naming both versions.
pub fn world_version(file: &Path, engine: &Engine, component: &Component) -> Result<String, String> {
    let ty = component.component_type();
    let names: Vec<String> = ty.exports(engine).map(|(n, _)| n.to_string()).collect();
    let Some(found) = names.iter().find_map(|n| n.strip_prefix(TOOL_EXPORT_PREFIX)) else {
        let list = if names.is_empty() {
            "nothing".to_string()
        } else {
            names.join(", ")
        };
        return Err(format!(
            "{}: not a cst-agent plugin: the component exports {list}, but no `{WORLD_PACKAGE}/tool` interface; \
             it was built for another world (expected world `{WORLD_PACKAGE}/plugin@{WORLD_VERSION}`)",
            file.display()
        ));
    };
    if !compatible(found, WORLD_VERSION) {
        return Err(format!(
            "{}: built for {WORLD_PACKAGE}@{found}, but this cst-agent speaks {WORLD_PACKAGE}@{WORLD_VERSION}; \
             rebuild the plugin against wit/v{WORLD_VERSION} (or update cst-agent)",
            file.display()
        ));
    }
    Ok(found.to_string())
}

/// Semver compatibility as Cargo reads it: same major, and for 0.x the same minor.
pub fn compatible(found: &str, ours: &str) -> bool {
    fn parts(v: &str) -> Option<(u64, u64)> {
        let core = v.split(['-', '+']).next()?;
        let mut it = core.split('.');
        Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
    }
    match (parts(found), parts(ours)) {
        (Some((0, a)), Some((0, b))) => a == b,
        (Some((a, _)), Some((b, _))) => a == b && a != 0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        let p = Path::new("x.wasm");
        assert!(check_header(p, b"\0asm\x0d\x00\x01\x00rest").is_ok());
        assert!(check_header(p, b"\0asm\x01\x00\x00\x00")
            .unwrap_err()
            .contains("core wasm module"));
        assert!(check_header(p, b"\0as").unwrap_err().contains("truncated"));
        assert!(check_header(p, b"hello world").unwrap_err().contains("not a wasm file"));
    }

    #[test]
    fn read_limited_checks_size_and_kind() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small.wasm");
        std::fs::write(&small, b"0123456789").unwrap();
        assert_eq!(read_limited(&small, 10).unwrap().len(), 10);
        let e = read_limited(&small, 9).unwrap_err();
        assert!(e.contains("small.wasm") && e.contains("too large (10 bytes"), "{e}");
        let e = read_limited(dir.path(), 10).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        let e = read_limited(&dir.path().join("missing.wasm"), 10).unwrap_err();
        assert!(e.contains("missing.wasm: cannot read"), "{e}");
    }

    #[test]
    fn versions() {
        assert!(compatible("0.1.0", "0.1.0"));
        assert!(compatible("0.1.3", "0.1.0"));
        assert!(!compatible("0.2.0", "0.1.0"));
        assert!(!compatible("1.0.0", "0.1.0"));
        assert!(compatible("1.2.0", "1.0.0"));
        assert!(!compatible("x", "0.1.0"));
    }
}
