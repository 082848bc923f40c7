//! Sender algorithms, one file each. Each file opens with its source, its equations by number and every
//! DECISION taken where the source is ambiguous (see also `docs/algorithms/<name>.md`).

pub mod africa;
pub mod bic;
pub mod binomial;
pub mod cubic;
pub mod fast;
pub mod highspeed;
pub mod hybla;
pub mod libra;
pub mod madison;
pub mod maxnet;
pub mod reno;
pub mod scalable;
pub mod vegas;
pub mod westwood;
