//! Coverage-guided fuzzing of the transport's state machines (not the wire codec, which
//! `crates/cclab-net/tests/wire_fuzz.rs` covers): the input bytes decode into a flow (algorithm — any
//! the registry builds —, loss recovery, window, delayed ACK, size, honest loss) and a sequence of
//! events injected at given times into an honest transfer between a `Sender` and a `Receiver`: hostile
//! data segments, blind hostile ACKs, on-path ACKs echoing a real transmission, spurious timer events.
//!
//! The harness is `crates/cclab-transport/tests/common/world.rs`, shared with the proptests of
//! `tests/hostile.rs`, so both assert the same things: no panic (overflow checks on: `make fuzz`
//! builds with debug assertions), the invariants `World::check` lists after every event (snd_una ≤
//! snd_nxt, pipe ≤ outstanding, the receive window honoured, rcv_nxt never going back, every SACK block
//! our receiver emits well formed and inside its window), the rejection counters matching the hostile
//! input, and, unless an injected ACK echoed a real transmission (an on-path attacker), the honest
//! transfer completing within a bounded virtual time.

#![no_main]

use cclab_cc::cc::Recovery;
use cclab_cc::env::SenderEnv;
use cclab_cc::registry::{build_sender, SENDER_NAMES};
use cclab_cc::time::{Nanos, NS_PER_SEC};
use cclab_transport::{AckSegment, DataSegment, SackBlock, MAX_SACK_BLOCKS};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

#[path = "../../crates/cclab-transport/tests/common/world.rs"]
mod world;
use world::{Hostile, Params, World, MSS, T0};

/// Sequence numbers: anywhere, the flow's own range, the top of the space.
fn seq(u: &mut Unstructured) -> Result<u64> {
    Ok(match u.int_in_range(0..=3u8)? {
        0 => u.arbitrary()?,
        1 | 2 => u.int_in_range(0..=255u64)?,
        _ => u64::MAX - u.int_in_range(0..=255u64)?,
    })
}

/// Timestamps: anywhere, tiny, or within the run's first seconds of virtual time.
fn stamp(u: &mut Unstructured) -> Result<u64> {
    Ok(match u.int_in_range(0..=2u8)? {
        0 => u.arbitrary()?,
        1 => u.int_in_range(0..=1000u64)?,
        _ => T0 + u.int_in_range(0..=4 * NS_PER_SEC)?,
    })
}

fn payload(u: &mut Unstructured) -> Result<u32> {
    Ok(if u.arbitrary()? {
        u.int_in_range(0..=MSS)?
    } else {
        u.arbitrary()?
    })
}

fn data(u: &mut Unstructured) -> Result<DataSegment> {
    Ok(DataSegment {
        seq: seq(u)?,
        payload: payload(u)?,
        flags: u.arbitrary()?,
        ts: stamp(u)?,
        fwd_field: u.arbitrary()?,
        ect: u.arbitrary()?,
        ce: u.arbitrary()?,
        tag: u.arbitrary()?,
    })
}

fn ack(u: &mut Unstructured) -> Result<AckSegment> {
    let mut a = AckSegment {
        cum_ack: seq(u)?,
        n_sack: if u.arbitrary()? {
            u.int_in_range(0..=MAX_SACK_BLOCKS as u8)?
        } else {
            u.arbitrary()?
        },
        ts_echo: stamp(u)?,
        rx_time: stamp(u)?,
        acked_seq: seq(u)?,
        acked_flags: u.arbitrary()?,
        acked_bytes: payload(u)?,
        echo_field: u.arbitrary()?,
        ece: u.arbitrary()?,
        ..Default::default()
    };
    for b in a.sack.iter_mut() {
        *b = SackBlock {
            start: seq(u)?,
            end: seq(u)?,
        };
    }
    Ok(a)
}

struct Case {
    algorithm: &'static str,
    params: Params,
    events: Vec<(Nanos, Hostile)>,
}

fn case(u: &mut Unstructured) -> Result<Case> {
    let algorithm = *u.choose(SENDER_NAMES)?;
    let (sack, recovery) = *u.choose(&[
        (true, Recovery::Sack),
        (false, Recovery::NewReno),
        (false, Recovery::Reno),
    ])?;
    let params = Params {
        sack,
        recovery,
        max_window: u.int_in_range(1..=128)?,
        delayed_ack: u.int_in_range(1..=2)?,
        pkts: u.int_in_range(1..=120)?,
        loss_every: if u.arbitrary()? {
            0
        } else {
            u.int_in_range(2..=40)?
        },
        // Both ends keyed (the real datapath) or not (the simulator): hostile data is refused as
        // unverified in the first, taken inside the window in the second.
        keyed: u.arbitrary()?,
        // Linux's receiver rules (ACK every second segment, D-SACK) and sender (RACK, undo), as the proptests
        // of tests/hostile.rs run them.
        linux_receiver: u.arbitrary()?,
        linux_sender: u.arbitrary()?,
    };
    let mut events = Vec::new();
    while !u.is_empty() && events.len() < 48 {
        let t = u.int_in_range(0..=2_000_000u64)? * 1000; // µs, the first 2 s
        let e = match u.int_in_range(0..=3u8)? {
            0 => Hostile::Data(data(u)?),
            1 => Hostile::Ack(ack(u)?),
            2 => Hostile::EchoAck(ack(u)?, u.arbitrary()?),
            _ => Hostile::Tick,
        };
        events.push((t, e));
    }
    Ok(Case {
        algorithm,
        params,
        events,
    })
}

/// A 120-packet transfer honestly takes under a second; hostile input may cost it RTOs.
const DEADLINE: Nanos = 120 * NS_PER_SEC;

fuzz_target!(|bytes: &[u8]| {
    let mut u = Unstructured::new(bytes);
    let Ok(Case {
        algorithm,
        mut params,
        events,
    }) = case(&mut u)
    else {
        return;
    };
    let env = SenderEnv {
        mss: MSS,
        packet_size: MSS + 52,
        initial_cwnd: 10.0,
        seed: 1,
        // The scenario default (`[transport] hystart = false`).
        hystart: false,
    };
    let built = build_sender(algorithm, &Default::default(), &env).expect("default parameters");
    // The transport's resolution (cclab-spec): the algorithm's recovery wins, SACK recovery implies
    // SACK blocks.
    if let Some(r) = built.recovery {
        params.recovery = r;
    }
    params.sack |= params.recovery == Recovery::Sack;
    let mut w = World::new(params, built.cc);
    w.run(&events, DEADLINE);
    if w.out.informed_acks == 0 {
        w.assert_completed();
    }
    w.assert_counted();
});
