//! TEST ONLY. Tools that try to escape the sandbox or exhaust its limits; the host tests
//! (host/tests/wasm_sandbox.rs) check that every one of them is stopped. Never install this
//! plugin for real use.

use cst_plugin::{Level, Perm, Tool};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
pub struct PathArgs {
    pub path: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct WriteArgs {
    pub path: String,
    pub content: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct NameArgs {
    pub name: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
pub struct SizeArgs {
    pub mib: u64,
}

#[derive(Deserialize, JsonSchema)]
pub struct CountArgs {
    pub n: u64,
}

#[derive(Deserialize, JsonSchema)]
pub struct TextArgs {
    pub text: String,
}

/// Read any path (absolute, `..`, a symlink out of the workspace...).
pub struct Read;
impl Tool for Read {
    const NAME: &'static str = "hostile_read";
    const DESCRIPTION: &'static str = "TEST ONLY: read a file by any path.";
    const PERM: Perm = Perm::Read;
    type Args = PathArgs;
    fn call(a: PathArgs) -> Result<String, String> {
        std::fs::read_to_string(&a.path).map_err(|e| format!("read {}: {e}", a.path))
    }
}

/// Write a file (denied when only `workspace-read` is granted).
pub struct Write;
impl Tool for Write {
    const NAME: &'static str = "hostile_write";
    const DESCRIPTION: &'static str = "TEST ONLY: write a file.";
    const PERM: Perm = Perm::Write;
    type Args = WriteArgs;
    fn call(a: WriteArgs) -> Result<String, String> {
        std::fs::write(&a.path, a.content).map_err(|e| format!("write {}: {e}", a.path))?;
        Ok(format!("wrote {}", a.path))
    }
}

/// Read an environment variable (only `env:NAME` capabilities are visible).
pub struct Env;
impl Tool for Env {
    const NAME: &'static str = "hostile_env";
    const DESCRIPTION: &'static str =
        "TEST ONLY: read an environment variable; also reports how many variables and arguments are visible.";
    const PERM: Perm = Perm::Read;
    type Args = NameArgs;
    fn call(a: NameArgs) -> Result<String, String> {
        let counts = format!("vars={} args={}", std::env::vars().count(), std::env::args().count());
        match std::env::var(&a.name) {
            Ok(v) => Ok(format!("{}={v} ({counts})", a.name)),
            Err(e) => Err(format!("env {}: {e} ({counts})", a.name)),
        }
    }
}

/// Loop forever (stopped by the epoch deadline).
pub struct Spin;
impl Tool for Spin {
    const NAME: &'static str = "hostile_spin";
    const DESCRIPTION: &'static str = "TEST ONLY: an infinite loop.";
    const PERM: Perm = Perm::Read;
    type Args = NoArgs;
    #[allow(clippy::empty_loop)]
    fn call(_: NoArgs) -> Result<String, String> {
        let mut x: u64 = 0;
        loop {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    }
}

/// Allocate and touch `mib` MiB (stopped by the memory cap).
pub struct Alloc;
impl Tool for Alloc {
    const NAME: &'static str = "hostile_alloc";
    const DESCRIPTION: &'static str = "TEST ONLY: allocate and touch `mib` MiB.";
    const PERM: Perm = Perm::Read;
    type Args = SizeArgs;
    fn call(a: SizeArgs) -> Result<String, String> {
        let n = (a.mib as usize).saturating_mul(1 << 20);
        let mut v: Vec<u8> = Vec::with_capacity(n);
        v.resize(n, 1);
        Ok(format!(
            "allocated {} MiB, sum {}",
            a.mib,
            std::hint::black_box(&v)
                .iter()
                .step_by(4096)
                .map(|b| *b as u64)
                .sum::<u64>()
        ))
    }
}

/// Recurse `n` levels deep (stopped by the wasm stack limit).
pub struct Recurse;
impl Tool for Recurse {
    const NAME: &'static str = "hostile_recurse";
    const DESCRIPTION: &'static str = "TEST ONLY: recurse `n` levels deep.";
    const PERM: Perm = Perm::Read;
    type Args = CountArgs;
    fn call(a: CountArgs) -> Result<String, String> {
        Ok(format!("depth result {}", deep(a.n)))
    }
}

#[inline(never)]
fn deep(n: u64) -> u64 {
    if n == 0 {
        return 1;
    }
    // Not a tail call and not an accumulator LLVM could turn into a loop.
    let r = deep(n - 1);
    r.rotate_left((n % 7) as u32) ^ n
}

/// Burn `n` loop iterations (stopped by a fuel budget).
pub struct Burn;
impl Tool for Burn {
    const NAME: &'static str = "hostile_burn";
    const DESCRIPTION: &'static str = "TEST ONLY: burn CPU for `n` iterations.";
    const PERM: Perm = Perm::Read;
    type Args = CountArgs;
    fn call(a: CountArgs) -> Result<String, String> {
        let mut x: u64 = 0;
        for i in 0..a.n {
            x = std::hint::black_box(x ^ i);
        }
        Ok(format!("burned {} iterations ({x})", a.n))
    }
}

/// Echo the text back (the "next call still works" probe) and log a line.
pub struct Echo;
impl Tool for Echo {
    const NAME: &'static str = "hostile_echo";
    const DESCRIPTION: &'static str = "TEST ONLY: return the text; logs it and prints it to stdout/stderr too.";
    const PERM: Perm = Perm::Read;
    type Args = TextArgs;
    fn call(a: TextArgs) -> Result<String, String> {
        cst_plugin::log(Level::Info, &format!("echo called with {} bytes", a.text.len()));
        println!("guest stdout: {}", a.text);
        eprintln!("guest stderr: {}", a.text);
        Ok(a.text)
    }
}

/// Block in a WASI sleep (a host call, where no epoch tick interrupts the guest) for `n` ms.
pub struct Sleep;
impl Tool for Sleep {
    const NAME: &'static str = "hostile_sleep";
    const DESCRIPTION: &'static str = "TEST ONLY: sleep `n` milliseconds in one host call.";
    const PERM: Perm = Perm::Read;
    type Args = CountArgs;
    fn call(a: CountArgs) -> Result<String, String> {
        std::thread::sleep(std::time::Duration::from_millis(a.n));
        Ok(format!("slept {} ms", a.n))
    }
}

/// Log `n` lines of 1 KiB through the host's `log` import.
pub struct LogFlood;
impl Tool for LogFlood {
    const NAME: &'static str = "hostile_log_flood";
    const DESCRIPTION: &'static str = "TEST ONLY: log `n` lines of 1 KiB each.";
    const PERM: Perm = Perm::Read;
    type Args = CountArgs;
    fn call(a: CountArgs) -> Result<String, String> {
        let line = "x".repeat(1024);
        for _ in 0..a.n {
            cst_plugin::log(Level::Info, &line);
        }
        Ok(format!("logged {} lines", a.n))
    }
}

/// Open the workspace root `n` times and keep every handle: exhausts the host's descriptors
/// unless the host caps the resources of a call.
pub struct OpenMany;
impl Tool for OpenMany {
    const NAME: &'static str = "hostile_open_many";
    const DESCRIPTION: &'static str = "TEST ONLY: open `.` `n` times, keeping every handle.";
    const PERM: Perm = Perm::Read;
    type Args = CountArgs;
    fn call(a: CountArgs) -> Result<String, String> {
        let mut kept = Vec::new();
        for _ in 0..a.n {
            match std::fs::File::open(".") {
                Ok(f) => kept.push(f),
                Err(e) => return Ok(format!("opened {} then: {e}", kept.len())),
            }
        }
        Ok(format!("opened {}", kept.len()))
    }
}

/// Log the value of a granted variable as a warning: the host's log must not show a secret.
pub struct LogEnv;
impl Tool for LogEnv {
    const NAME: &'static str = "hostile_log_env";
    const DESCRIPTION: &'static str = "TEST ONLY: log the value of the variable `name`.";
    const PERM: Perm = Perm::Read;
    type Args = NameArgs;
    fn call(a: NameArgs) -> Result<String, String> {
        let value = std::env::var(&a.name).unwrap_or_default();
        cst_plugin::log(Level::Warn, &format!("{}={value}", a.name));
        Ok(format!("logged {}", a.name))
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct AddrArgs {
    /// `HOST:PORT`, e.g. `127.0.0.1:8080`.
    pub addr: String,
}

/// Open a TCP connection and send a line (denied: a wasm plugin has no network).
pub struct Connect;
impl Tool for Connect {
    const NAME: &'static str = "hostile_connect";
    const DESCRIPTION: &'static str = "TEST ONLY: connect to `addr` over TCP and send a line.";
    const PERM: Perm = Perm::Net;
    type Args = AddrArgs;
    fn call(a: AddrArgs) -> Result<String, String> {
        use std::io::Write as _;
        let mut s = std::net::TcpStream::connect(&a.addr).map_err(|e| format!("connect {}: {e}", a.addr))?;
        s.write_all(b"hello from the guest\n")
            .map_err(|e| format!("send to {}: {e}", a.addr))?;
        Ok(format!("connected to {}", a.addr))
    }
}

cst_plugin::export_plugin!(
    Read, Write, Env, Spin, Alloc, Recurse, Burn, Echo, Sleep, LogFlood, OpenMany, LogEnv, Connect
);
