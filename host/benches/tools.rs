//! `cargo bench -p cst-agent --bench tools` — prints one table of measurements. Each area adds a
//! section file here (`mod <area>_section;`) with a `run(&Bench)` that adds rows.

mod core_section;
mod ext_section;
mod mcp_section;
mod mcp_serve_section;
mod python_section;
mod wasm_section;

use std::time::Duration;

/// Shared by the sections: a runtime and the table being printed.
pub struct Bench {
    pub rt: tokio::runtime::Runtime,
    rows: std::sync::Mutex<Vec<[String; 3]>>,
}

impl Bench {
    /// Add a row: metric, value, note (target, comparison).
    pub fn row(&self, metric: impl Into<String>, value: impl Into<String>, note: impl Into<String>) {
        let r = [metric.into(), value.into(), note.into()];
        eprintln!("  {} = {}  {}", r[0], r[1], r[2]);
        self.rows.lock().unwrap_or_else(|e| e.into_inner()).push(r);
    }
}

/// p-th percentile (0..=100) of `samples` (sorted in place).
pub fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    if samples.is_empty() {
        return Duration::ZERO;
    }
    let i = ((samples.len() - 1) as f64 * p / 100.0).round() as usize;
    samples[i]
}

/// `12.3 µs` / `4.56 ms` / `1.23 s`.
pub fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.1} µs")
    } else if us < 1e6 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

fn main() {
    // `cargo bench --bench tools -- core mcp` runs only the named sections (wasm, python, ext, mcp,
    // mcp-serve, core, apis); `cargo bench` itself passes `--bench`, which is not a section.
    let wanted: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let on = |name: &str| wanted.is_empty() || wanted.iter().any(|w| w == name);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let bench = Bench {
        rt,
        rows: std::sync::Mutex::new(Vec::new()),
    };
    eprintln!("running bench sections...");
    if on("wasm") {
        wasm_section::run(&bench);
    }
    if on("python") {
        python_section::run(&bench);
    }
    // The other sections print their own tables.
    if on("ext") {
        ext_section::run();
    }
    if on("mcp") {
        mcp_section::run();
    }
    if on("mcp-serve") {
        mcp_serve_section::run();
    }
    if on("core") {
        core_section::run();
    }
    if on("apis") {
        core_section::run_apis();
    }

    let rows = bench.rows.into_inner().unwrap_or_else(|e| e.into_inner());
    if rows.is_empty() {
        return;
    }
    let w0 = rows.iter().map(|r| r[0].chars().count()).max().unwrap_or(6).max(6);
    let w1 = rows.iter().map(|r| r[1].chars().count()).max().unwrap_or(5).max(5);
    println!();
    println!("| {:<w0$} | {:>w1$} | note |", "metric", "value");
    println!("|{}|{}|------|", "-".repeat(w0 + 2), "-".repeat(w1 + 2));
    for r in &rows {
        println!("| {:<w0$} | {:>w1$} | {} |", r[0], r[1], r[2]);
    }
}
