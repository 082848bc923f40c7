//! cclab-sim: a deterministic packet-level discrete-event simulator driving the sans-IO transport.
//!
//! Entry points: [`run`] (a [`spec::RunSpec`] in, a [`result::RunResult`] out) and [`run_json`];
//! stepped runs (one flow driven from outside): [`Simulation::with_external`], [`Simulation::run_until`].
//! Time is integer nanoseconds, events are ordered by (time, insertion sequence), randomness comes
//! from per-component seeded streams: the same spec gives the same result, bit for bit.

pub mod events;
pub mod result;
pub mod sim;
pub mod traffic;

/// The run spec, its validation and limits: the `cclab-spec` crate, shared with the real datapath.
pub use cclab_spec as spec;

pub use result::RunResult;
pub use sim::{transport_config, FlowProbe, LinkProbe, Simulation};
pub use spec::{RunSpec, SpecError};

/// Runs a simulation. `progress` receives the simulated time (s) at most every ~0.25 s of wall time
/// and may return false to abort.
pub fn run(
    spec: &RunSpec,
    progress: Option<&mut dyn FnMut(f64) -> bool>,
) -> Result<RunResult, SpecError> {
    let result = Simulation::new(spec)?.run(progress);
    match result.over_budget {
        Some(e) => Err(e),
        None => Ok(result),
    }
}

/// Runs a simulation from its JSON spec.
pub fn run_json(spec_json: &str) -> Result<RunResult, SpecError> {
    let spec: RunSpec =
        serde_json::from_str(spec_json).map_err(|e| SpecError::new("spec", e.to_string()))?;
    run(&spec, None)
}
