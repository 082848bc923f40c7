//! Both drivers resolve a flow's transport settings the same way (`cclab_spec::resolve`): the
//! simulator's config (`cclab_sim::transport_config`) and the real datapath's, for the sender (with
//! the built algorithm's recovery) and for the receiver (without), differ only in how a packet's bytes
//! split into header and payload (and in the real datapath's pacing catch-up). In particular `cc = "sack"` with `sack = false` runs SACK recovery
//! with SACK blocks in both (the real datapath used to turn SACK blocks off there).

use cclab_cc::cc::Recovery;
use cclab_cc::registry::{build_sender, SenderEnv, SENDER_NAMES};
use cclab_net::endpoint::{transport_config, WIRE_OVERHEAD};
use cclab_net::spec::spec::LossDetectionKind;
use cclab_net::spec::{FlowSpec, ReceiverKind, StartSpec, TransportSpec};
use cclab_transport::{CatchUp, Config};

fn flow(cc: &str, transport: TransportSpec) -> FlowSpec {
    FlowSpec {
        group: 0,
        cc: cc.into(),
        params: Default::default(),
        path: vec![0],
        ack_path: vec![1],
        extra_delay_fwd: 0.0,
        extra_delay_rev: 0.0,
        rtt: 0.04,
        start: StartSpec::At(0.0),
        stop: None,
        size: None,
        transport,
    }
}

/// The three configs of one flow: simulator, real sender, real receiver.
fn resolved(f: &FlowSpec) -> [Config; 3] {
    let t = &f.transport;
    let env = SenderEnv {
        mss: t.mss,
        packet_size: t.packet_size,
        initial_cwnd: t.initial_cwnd,
        seed: 1,
        hystart: false,
    };
    let built = build_sender(&f.cc, &f.params, &env).unwrap();
    [
        cclab_sim::transport_config(f),
        transport_config(f, built.recovery),
        transport_config(f, None),
    ]
}

#[test]
fn simulator_and_real_datapath_resolve_alike() {
    let transports = [
        TransportSpec::default(),
        TransportSpec {
            sack: false,
            ..TransportSpec::default()
        },
        TransportSpec {
            mss: 1000,
            packet_size: 1200,
            initial_cwnd: 2.0,
            delayed_ack: 2,
            delack_timeout: 0.04,
            min_rto: 1.0,
            sack: false,
            ecn: true,
            max_window: Some(118),
            prr: true,
            rto_undo: true,
            hystart: true,
            cwnd_validation: true,
            tlp: true,
            receiver: ReceiverKind::Linux,
            dsack: true,
            loss_detection: LossDetectionKind::Rack,
            undo: true,
        },
    ];
    for t in transports {
        for cc in SENDER_NAMES {
            let f = flow(cc, t.clone());
            let [sim, snd, rcv] = resolved(&f);
            let what = format!("cc {cc}, sack {}", t.sack);
            // the byte split is the drivers' own
            assert_eq!((sim.mss, sim.header_bytes), (t.mss, t.packet_size - t.mss));
            assert_eq!(
                (snd.mss, snd.header_bytes),
                (t.packet_size - WIRE_OVERHEAD, WIRE_OVERHEAD)
            );
            // the real datapath's pacing catch-up is its own (its timers fire late; the simulator's
            // never do)
            assert_eq!(sim.pacing_catch_up, CatchUp::NONE);
            assert_eq!(snd.pacing_catch_up, cclab_net::endpoint::PACING_CATCH_UP);
            // everything else is the spec's one resolution
            let same_split = |c: &Config| Config {
                mss: sim.mss,
                header_bytes: sim.header_bytes,
                pacing_catch_up: CatchUp::NONE,
                ..c.clone()
            };
            assert_eq!(same_split(&snd), sim, "sender: {what}");
            assert_eq!(same_split(&rcv), sim, "receiver: {what}");
        }
    }
}

#[test]
fn sack_recovery_without_sack_option_still_gets_sack_blocks() {
    let no_sack = TransportSpec {
        sack: false,
        ..TransportSpec::default()
    };
    for c in resolved(&flow("sack", no_sack.clone())) {
        assert_eq!((c.sack, c.recovery), (true, Recovery::Sack));
    }
    for c in resolved(&flow("reno", no_sack.clone())) {
        assert_eq!((c.sack, c.recovery), (false, Recovery::Reno));
    }
    for c in resolved(&flow("newreno", no_sack)) {
        assert_eq!((c.sack, c.recovery), (false, Recovery::NewReno));
    }
}
