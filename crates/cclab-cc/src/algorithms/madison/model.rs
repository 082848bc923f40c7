//! The paper's formulas as pure functions (units: ms, Mbit/s = kbit/ms, packets, packets/ms): eq. (3)
//! b_target, the M/D/1 measures of §3.3 (eqs. 4–11), S_target in closed form from eqs. (12)+(13) and
//! (12)+(14), the §3.4 back-solve of n_D and the §4.2 probe spacing. No state.

/// Eq. (3): the target average backlog (packets) for loss-event rate `p`; `p` is clamped to `p_min`
/// inside the formula only. `ratio` = d̄/RTT_norm (0.0235).
pub fn b_target(p: f64, ratio: f64, p_min: f64) -> f64 {
    2.0 / 7.0 * ratio * (9.0 + (25.0 + 56.0 / p.max(p_min)).sqrt())
}

/// Eq. (8): M/D/1 utilisation from the average total backlog B̄ (packets).
pub fn utilization(big_b: f64) -> f64 {
    let b = big_b.max(0.0);
    2.0 * b / (2.0 * b + 1.0)
}

/// Eq. (12)'s left side: the flow's average backlog (packets) when it sends at `s` and the link's
/// utilisation becomes `u_new` (M/D/1 waiting time without the U_new factor, times `s`, Little's law).
pub fn md1_flow_backlog(s: f64, a: f64, u_new: f64) -> f64 {
    s * a / (2.0 * (1.0 - u_new))
}

/// Eq. (13): predicted utilisation when only this flow changes its rate from `s_old` to `s`.
pub fn u_new_startup(a: f64, u: f64, s_old: f64, s: f64) -> f64 {
    (u - s_old * a).max(0.0) + s * a
}

/// Eq. (14): predicted utilisation when `n_d` flows (this one included) move from `s_old` to `s`.
pub fn u_new_shared(a: f64, x_xt: f64, n_d: f64, s_old: f64, s: f64) -> f64 {
    ((x_xt - (n_d - 1.0) * s_old).max(0.0) + n_d * s) * a
}

/// Eqs. (12)+(13) solved for S: S = 2b(1 − U0)/(a(1 + 2b)), U0 = max(0, U − S_old·a).
pub fn s_target_startup(b: f64, a: f64, u: f64, s_old: f64) -> f64 {
    let u0 = (u - s_old * a).max(0.0);
    2.0 * b * (1.0 - u0) / (a * (1.0 + 2.0 * b))
}

/// Eqs. (12)+(14) solved for S: S = 2b(1 − a·X')/(a(1 + 2b·n_D)), X' = max(0, X_xt − (n_D − 1)·S_old).
pub fn s_target_shared(b: f64, a: f64, x_xt: f64, n_d: f64, s_old: f64) -> f64 {
    let x = (x_xt - (n_d - 1.0) * s_old).max(0.0);
    2.0 * b * (1.0 - a * x) / (a * (1.0 + 2.0 * b * n_d))
}

/// §3.4 / DECISION 10: n_D back-solved from eqs. (12)+(14) with the achieved backlog `b_hat` in place
/// of b_target, for a change from `s_old` to `s` predicted with `x_xt` and `n_d_old`. `None` when the
/// guard applies or the result is outside [1, 1/(a·S)].
pub fn back_solve_n_d(
    a: f64,
    x_xt: f64,
    n_d_old: f64,
    s_old: f64,
    s: f64,
    b_hat: f64,
) -> Option<f64> {
    if !(b_hat > 0.0 && s > 0.0 && a > 0.0) {
        return None;
    }
    let n_d = if x_xt - (n_d_old - 1.0) * s_old > 0.0 {
        if (s - s_old).abs() < 0.05 * s_old {
            return None; // S ≈ S_old: the change says nothing about how many flows followed it
        }
        (1.0 - a * x_xt - a * s_old - a * s / (2.0 * b_hat)) / (a * (s - s_old))
    } else {
        1.0 / (a * s) - 1.0 / (2.0 * b_hat)
    };
    (n_d.is_finite() && n_d >= 1.0 && n_d <= 1.0 / (a * s)).then_some(n_d)
}

/// §4.2: the desired average probe spacing (ms), tProbe*·a clamped to [min, max].
pub fn probe_spacing_ms(a: f64, tprobe: f64, min_ms: f64, max_ms: f64) -> f64 {
    (tprobe * a).clamp(min_ms, max_ms)
}

/// The bottleneck measures of §3.3 computed from one set of inputs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Measures {
    /// d̄ = RTT_avg − RTT_min (ms).
    pub d: f64,
    /// Eq. (4) b̄ = S·d̄, this flow's backlog (packets).
    pub b: f64,
    /// Eq. (6) B̄ = d̄/a, total backlog (packets).
    pub big_b: f64,
    /// Eq. (8).
    pub u: f64,
    /// Eq. (9).
    pub u_flow: f64,
    /// Eq. (10), packets/ms, ≥ 0.
    pub x_xt: f64,
    /// Eq. (11) with DECISION 3, ≥ 1.
    pub n: f64,
}

/// §3.3 from RTT_avg, RTT_min (ms), a = packet kbit/C (ms) and this flow's rate `s` (packets/ms).
pub fn measures(rtt_avg: f64, rtt_min: f64, a: f64, s: f64) -> Measures {
    let d = (rtt_avg - rtt_min).max(0.0);
    let big_b = d / a;
    let u = utilization(big_b);
    let u_flow = s * a;
    let x_xt = ((u - u_flow) / a).max(0.0);
    let n = if u_flow > 0.0 {
        (u / u_flow).max(1.0)
    } else {
        1.0
    };
    Measures {
        d,
        b: s * d,
        big_b,
        u,
        u_flow,
        x_xt,
        n,
    }
}
