//! Sender algorithms, one file each (Madison, too large for one, a folder whose `mod.rs` plays that
//! file's part). Each opens with its source, its equations by number and every DECISION taken where the
//! source is ambiguous (see also `docs/algorithms/<name>.md`). Each is one row in
//! `registry::SENDERS`, except `external` (window and rate set from outside; built only by a stepping
//! driver, see its file).

pub mod africa;
pub mod bbr;
pub mod bbr3;
pub mod bic;
pub mod binomial;
pub mod copa;
pub mod cubic;
pub mod dctcp;
pub mod external;
pub mod fast;
#[cfg(test)]
pub(crate) mod fluid_path;
pub mod highspeed;
pub mod htcp;
pub mod hybla;
pub mod illinois;
pub mod ledbat;
pub mod libra;
pub mod lp;
pub mod madison;
pub mod maxnet;
pub mod reno;
pub mod scalable;
pub mod vegas;
pub mod veno;
pub mod westwood;
pub mod yeah;
