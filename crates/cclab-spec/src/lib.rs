//! cclab-spec: the run specification, the contract between the Python front door and both drivers
//! (the simulator `cclab-sim` and the real datapath `cclab-net`).
//!
//! * [`spec`]: the types ([`RunSpec`], [`LinkSpec`], [`FlowSpec`], …), carried as JSON.
//! * [`validate`](RunSpec::validate): what any driver needs of a spec before building from it (times,
//!   rates, probabilities, paths naming existing links, `0 < mss < packet_size`, the [`limits`]).
//! * [`limits`]: the named bounds, also read by Python (`cclab._native.limits()`), and the budget.
//! * [`estimate`](mod@estimate): what a run needs (memory, events), checked against the budget.
//! * [`resolve`]: a flow's transport settings ([`FlowSpec::transport_config`]), one rule for both
//!   drivers.
//!
//! Arrows point down only: `cc` ← `transport` ← `spec` ← {`sim`, `net`} ← `py`.

pub mod estimate;
pub mod limits;
pub mod resolve;
pub mod spec;
mod validate;

pub use estimate::Estimate;
pub use limits::Budget;
pub use spec::{FlowSpec, LinkSpec, ReceiverKind, RunSpec, StartSpec, TrafficSpec, TransportSpec};

/// A spec that cannot run: the field (a path into the run spec, `flows[2].transport`) and what is
/// wrong with it. Drivers also report their own build errors (an algorithm's parameters) this way.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecError {
    pub field: String,
    pub message: String,
}

impl SpecError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> SpecError {
        SpecError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for SpecError {}
