//! Prints the JSON Schema of one line of `cst-agent exec --json`:
//!
//! ```sh
//! cargo run -q -p cst-protocol --example headless_schema > docs/headless-events.schema.json
//! ```

use std::io::Write;

fn main() {
    let schema = cst_protocol::headless::schema();
    let mut out = std::io::stdout().lock();
    let written = serde_json::to_writer_pretty(&mut out, &schema)
        .map_err(std::io::Error::from)
        .and_then(|()| writeln!(out))
        .and_then(|()| out.flush());
    if let Err(e) = written {
        eprintln!("error: cannot write the schema: {e}");
        std::process::exit(1);
    }
}
