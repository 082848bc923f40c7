//! HighSpeed TCP (Floyd, RFC 3649).
//!
//! Above Low_Window the response function is w = 0.12/p^0.835 (RFC 3649 §5), realised per RTT as
//! w ← w + a(w) and on loss w ← (1 − b(w))·w, with (§5, "Specifying the increase and decrease"):
//! * p(w) = exp( (ln w − ln W_low)/(ln W_high − ln W_low) · (ln P_high − ln P_low) + ln P_low ),
//!   P_low = 1.5/W_low² (Reno's response at W_low);
//! * b(w) = (High_Decrease − 0.5)·(ln w − ln W_low)/(ln W_high − ln W_low) + 0.5;
//! * a(w) = w²·p(w)·2·b(w)/(2 − b(w)).
//!
//! At or below Low_Window the rules are Reno's. Defaults (RFC): Low_Window 38, High_Window 83000,
//! High_P 1e-7, High_Decrease 0.1. The functions are evaluated exactly by default; `table = "linux"`
//! uses Linux's 72-row table instead (RFC 3649 Appendix B's rows, b rounded to 1/256: a step function,
//! for cross-checks against Linux `tcp_highspeed.c`). `a_b` is public so TCP-Africa's fast mode can
//! reuse it.
//!
//! Undo (a reduction found spurious): Reno's, max(cwnd, prior) (Linux: `tcp_reno_undo_cwnd`); a(w) and
//! b(w) are functions of the window, so nothing else needs restoring.

use crate::cc::{
    reno_on_ack, reno_on_timeout, reno_undo, slow_start, AckSample, CongestionControl, LossEvent,
    TimeoutEvent,
};
use crate::params::{ParamError, ParamReader, Params};

/// The RFC 3649 response-function parameters.
#[derive(Clone, Copy, Debug)]
pub struct HsParams {
    pub low_window: f64,
    pub high_window: f64,
    pub high_p: f64,
    pub high_decrease: f64,
}

impl Default for HsParams {
    fn default() -> Self {
        HsParams {
            low_window: 38.0,
            high_window: 83_000.0,
            high_p: 1e-7,
            high_decrease: 0.1,
        }
    }
}

impl HsParams {
    pub fn read(r: &mut ParamReader<'_>) -> Result<HsParams, ParamError> {
        let d = HsParams::default();
        Ok(HsParams {
            low_window: r.positive("low_window", d.low_window)?,
            high_window: r.positive("high_window", d.high_window)?,
            high_p: r.f64_in("high_p", d.high_p, 1e-15, 1.0)?,
            high_decrease: r.f64_in("high_decrease", d.high_decrease, 0.0, 0.5)?,
        })
    }

    /// (a(w), b(w)) for w > low_window; Reno's (1, 0.5) at or below it.
    pub fn a_b(&self, w: f64) -> (f64, f64) {
        if w <= self.low_window {
            return (1.0, 0.5);
        }
        let w = w.min(self.high_window);
        let x = (w.ln() - self.low_window.ln()) / (self.high_window.ln() - self.low_window.ln());
        let p_low = 1.5 / (self.low_window * self.low_window);
        let p = (x * (self.high_p.ln() - p_low.ln()) + p_low.ln()).exp();
        let b = (self.high_decrease - 0.5) * x + 0.5;
        let a = w * w * p * 2.0 * b / (2.0 - b);
        (a.max(1.0), b)
    }
}

/// RFC 3649 Appendix B's table as Linux's `hstcp_aimd_vals` holds it: row i covers windows in
/// (w[i−1], w[i]] (the last row everything above), with a(w) = i + 1 packets per RTT and b(w) = md/256.
/// Public data: the RFC's (w, a(w), b(w)) rows with b rounded to 1/256.
pub const LINUX_AIMD: [(u32, u32); 72] = [
    (38, 128),
    (118, 112),
    (221, 104),
    (347, 98),
    (495, 93),
    (663, 89),
    (851, 86),
    (1058, 83),
    (1284, 81),
    (1529, 78),
    (1793, 76),
    (2076, 74),
    (2378, 72),
    (2699, 71),
    (3039, 69),
    (3399, 68),
    (3778, 66),
    (4177, 65),
    (4596, 64),
    (5036, 62),
    (5497, 61),
    (5979, 60),
    (6483, 59),
    (7009, 58),
    (7558, 57),
    (8130, 56),
    (8726, 55),
    (9346, 54),
    (9991, 53),
    (10661, 52),
    (11358, 52),
    (12082, 51),
    (12834, 50),
    (13614, 49),
    (14424, 48),
    (15265, 48),
    (16137, 47),
    (17042, 46),
    (17981, 45),
    (18955, 45),
    (19965, 44),
    (21013, 43),
    (22101, 43),
    (23230, 42),
    (24402, 41),
    (25618, 41),
    (26881, 40),
    (28193, 39),
    (29557, 39),
    (30975, 38),
    (32450, 38),
    (33986, 37),
    (35586, 36),
    (37253, 36),
    (38992, 35),
    (40808, 35),
    (42707, 34),
    (44694, 33),
    (46776, 33),
    (48961, 32),
    (51258, 32),
    (53677, 31),
    (56230, 30),
    (58932, 30),
    (61799, 29),
    (64851, 28),
    (68113, 28),
    (71617, 27),
    (75401, 26),
    (79517, 26),
    (84035, 25),
    (89053, 24),
];

/// (a(w), b(w)) from [`LINUX_AIMD`]: the first row whose window is ≥ w (Linux keeps the row index `ai`
/// with `w[ai−1] < cwnd ≤ w[ai]`), the last row above the table.
pub fn linux_a_b(w: f64) -> (f64, f64) {
    let i = LINUX_AIMD
        .iter()
        .position(|&(cw, _)| w <= cw as f64)
        .unwrap_or(LINUX_AIMD.len() - 1);
    ((i + 1) as f64, LINUX_AIMD[i].1 as f64 / 256.0)
}

pub struct HighSpeed {
    hs: HsParams,
    /// `table = "linux"`: a(w), b(w) from [`LINUX_AIMD`] instead of RFC 3649's functions.
    linux_table: bool,
    cwnd: f64,
    ssthresh: f64,
}

impl HighSpeed {
    pub fn new(initial_cwnd: f64, params: &Params) -> Result<HighSpeed, ParamError> {
        let mut r = ParamReader::new("highspeed", params);
        let hs = HsParams::read(&mut r)?;
        let linux_table = r.choice("table", "rfc", &["rfc", "linux"])? == "linux";
        r.finish()?;
        if linux_table {
            // The table fixes the response function: the RFC's parameters would be silently ignored.
            for name in ["low_window", "high_window", "high_p", "high_decrease"] {
                if params.contains_key(name) {
                    return Err(ParamError {
                        field: name.into(),
                        message: "applies to table = \"rfc\" only (Linux's table fixes it)".into(),
                    });
                }
            }
        }
        Ok(HighSpeed {
            hs,
            linux_table,
            cwnd: initial_cwnd,
            ssthresh: f64::INFINITY,
        })
    }

    fn a_b(&self, w: f64) -> (f64, f64) {
        if self.linux_table {
            linux_a_b(w)
        } else {
            self.hs.a_b(w)
        }
    }

    fn low_window(&self) -> f64 {
        if self.linux_table {
            LINUX_AIMD[0].0 as f64
        } else {
            self.hs.low_window
        }
    }
}

impl CongestionControl for HighSpeed {
    fn name(&self) -> &'static str {
        "highspeed"
    }
    fn cwnd(&self) -> f64 {
        self.cwnd
    }
    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }
    fn on_ack(&mut self, ack: &AckSample) {
        if self.cwnd <= self.low_window() {
            return reno_on_ack(&mut self.cwnd, self.ssthresh, ack);
        }
        if ack.in_recovery || ack.app_limited {
            return;
        }
        let left = slow_start(&mut self.cwnd, self.ssthresh, ack.newly_acked as f64);
        if left > 0.0 {
            // a(w) packets per RTT = a(w)/w per acked packet.
            self.cwnd += self.a_b(self.cwnd).0 * left / self.cwnd;
        }
    }
    fn on_loss(&mut self, _ev: &LossEvent) {
        let b = self.a_b(self.cwnd).1;
        self.cwnd = ((1.0 - b) * self.cwnd).max(2.0);
        self.ssthresh = self.cwnd;
    }
    fn undo_cwnd(&mut self, prior_cwnd: f64, prior_ssthresh: f64) {
        reno_undo(
            &mut self.cwnd,
            &mut self.ssthresh,
            prior_cwnd,
            prior_ssthresh,
        );
    }
    fn on_timeout(&mut self, ev: &TimeoutEvent) {
        reno_on_timeout(&mut self.cwnd, &mut self.ssthresh, ev);
    }
    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        let (a, b) = self.a_b(self.cwnd);
        out.push(("hs_a", a));
        out.push(("hs_b", b));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_b_endpoints_and_shape() {
        // The RFC's anchors: Reno's (1, 0.5) at Low_Window and b = High_Decrease at High_Window, where
        // a = 83000²·1e-7·2·0.1/1.9 = 72.5 (the RFC's table ends at a = 72); both monotone between.
        let hs = HsParams::default();
        let (a, b) = hs.a_b(38.0 + 1e-9);
        assert!((a - 1.0).abs() < 0.01 && (b - 0.5).abs() < 1e-6, "{a} {b}");
        let (a, b) = hs.a_b(83_000.0);
        assert!((a - 72.5).abs() < 0.1 && (b - 0.1).abs() < 1e-9, "{a} {b}");
        let mut last = hs.a_b(39.0);
        for w in [100.0, 1_000.0, 10_000.0, 50_000.0] {
            let ab = hs.a_b(w);
            assert!(ab.0 > last.0 && ab.1 < last.1, "w={w}");
            last = ab;
        }
        // Reno below Low_Window.
        assert_eq!(hs.a_b(20.0), (1.0, 0.5));
    }

    #[test]
    fn linux_table_rows_and_agreement_with_the_functions() {
        // Row boundaries: w ≤ 38 is Reno's row; 39 is row 1 (a = 2, b = 112/256); above the last row
        // (89053) the last row holds (a = 72, b = 24/256).
        assert_eq!(linux_a_b(38.0), (1.0, 0.5));
        assert_eq!(linux_a_b(39.0), (2.0, 112.0 / 256.0));
        assert_eq!(linux_a_b(118.0), (2.0, 112.0 / 256.0));
        assert_eq!(linux_a_b(1e6), (72.0, 24.0 / 256.0));
        // The table tabulates the RFC's functions: at each row's window up to High_Window the RFC's b(w)
        // is the table's md/256 within 1/256 (measured: at most 0.98/256; the table rounds b to 1/256),
        // and the table's a = row + 1 is never above the RFC's a(w) and at most 1.8 packets per RTT
        // below it (measured: 0.09 at row 1 growing to 1.73 at row 70, the table holding whole
        // packets per RTT and changing a only at its rows' edges).
        let hs = HsParams::default();
        for (i, &(w, md)) in LINUX_AIMD.iter().enumerate().skip(1) {
            let w = w as f64;
            if w > hs.high_window {
                break;
            }
            let (a, b) = hs.a_b(w);
            assert!(
                (b - md as f64 / 256.0).abs() < 1.0 / 256.0,
                "row {i}: b {b} vs {md}/256"
            );
            let lag = a - (i + 1) as f64;
            assert!((0.0..1.8).contains(&lag), "row {i}: a {a} vs {}", i + 1);
        }
        // The parameter selects it; RFC parameters are refused with it.
        let mut p = Params::new();
        p.insert(
            "table".into(),
            crate::params::ParamValue::Str("linux".into()),
        );
        let mut h = HighSpeed::new(10.0, &p).unwrap();
        h.cwnd = 1000.0;
        h.on_loss(&LossEvent::default());
        assert!(
            (h.cwnd() - 1000.0 * (1.0 - 83.0 / 256.0)).abs() < 1e-9,
            "{}",
            h.cwnd()
        );
        p.insert("high_p".into(), crate::params::ParamValue::Num(1e-6));
        assert_eq!(HighSpeed::new(10.0, &p).err().unwrap().field, "high_p");
    }

    #[test]
    fn equilibrium_window_follows_the_response_function() {
        // Deterministic loss every 1/p packets: the window settles where growth per cycle equals the
        // decrease; compare the cycle-average window with 0.12/p^0.835 (RFC 3649 §5).
        for p in [1e-5f64, 1e-4] {
            let mut h = HighSpeed::new(10.0, &Params::new()).unwrap();
            h.ssthresh = 1.0;
            h.cwnd = 0.12 / p.powf(0.835);
            let per_loss = (1.0 / p) as u64;
            let (mut sum, mut n) = (0.0, 0u64);
            for cycle in 0..200 {
                for _ in 0..per_loss {
                    h.on_ack(&AckSample {
                        newly_acked: 1,
                        ..Default::default()
                    });
                    if cycle >= 100 {
                        sum += h.cwnd();
                        n += 1;
                    }
                }
                h.on_loss(&LossEvent::default());
            }
            let mean = sum / n as f64;
            let want = 0.12 / p.powf(0.835);
            assert!(
                (mean / want - 1.0).abs() < 0.25,
                "p={p}: mean window {mean:.0} vs {want:.0}"
            );
        }
    }
}
