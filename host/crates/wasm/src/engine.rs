//! The process-wide `Engine`: fuel metering on (a store without a budget gets `u64::MAX`), epoch
//! interruption driven by a ticker thread every [`TICK`], the pooling allocator when the machine
//! allows it (falls back to on-demand), component-model async features off.

use std::sync::OnceLock;
use std::time::Duration;

use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// Epoch tick period; a deadline is checked on every tick.
pub const TICK: Duration = Duration::from_millis(10);

/// Largest memory a plugin may ask for (plugin.json `limits.memory_mb` is checked against 4096).
const MAX_MEMORY_BYTES: usize = 4096 << 20;

struct Shared {
    engine: Engine,
    pooling: bool,
}

static SHARED: OnceLock<Result<Shared, String>> = OnceLock::new();

fn config(pooling: bool) -> Config {
    let mut c = Config::new();
    c.consume_fuel(true);
    c.epoch_interruption(true);
    if pooling {
        // Slots are reserved up front; sized for a session that runs a few dozen calls at once.
        let mut p = PoolingAllocationConfig::new();
        p.total_component_instances(64)
            .total_core_instances(512)
            .total_memories(64)
            .total_tables(512)
            .total_stacks(64)
            .max_memory_size(MAX_MEMORY_BYTES);
        c.allocation_strategy(InstanceAllocationStrategy::Pooling(p));
    }
    c
}

fn build() -> Result<Shared, String> {
    let (engine, pooling) = match Engine::new(&config(true)) {
        Ok(e) => (e, true),
        Err(e) => {
            tracing::debug!("pooling allocator unavailable ({e}); using on-demand allocation");
            let e = Engine::new(&config(false)).map_err(|e| format!("cannot create the wasm engine: {e}"))?;
            (e, false)
        }
    };
    start_ticker(&engine);
    Ok(Shared { engine, pooling })
}

/// The ticker always runs (a guest stuck in a loop is only stopped by it); it holds a weak
/// reference so it never keeps the engine alive on its own.
fn start_ticker(engine: &Engine) {
    let weak = engine.weak();
    let spawned = std::thread::Builder::new()
        .name("wasm-epoch".into())
        .spawn(move || loop {
            std::thread::sleep(TICK);
            match weak.upgrade() {
                Some(e) => e.increment_epoch(),
                None => return,
            }
        });
    if let Err(e) = spawned {
        tracing::error!("cannot start the wasm epoch ticker: {e}; wasm deadlines rely on the async timeout only");
    }
}

fn shared() -> Result<&'static Shared, String> {
    SHARED.get_or_init(build).as_ref().map_err(|e| e.clone())
}

/// The engine every component is compiled for.
pub fn engine() -> Result<&'static Engine, String> {
    shared().map(|s| &s.engine)
}

/// Whether the pooling allocator is in use (reported by the bench).
pub fn uses_pooling() -> bool {
    shared().map(|s| s.pooling).unwrap_or(false)
}
