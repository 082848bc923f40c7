//! The emulator's packet path under 10⁶ fuzzed frames (100 000 proptest cases × 10 frames): random
//! bytes, valid IPv4/UDP packets carrying our header, the same with bytes flipped or cut, and TCP-like
//! packets, at random times. Nothing may panic, every frame must be accounted for by the counters, and
//! everything that comes out must be a valid IPv4 packet.

use cclab_net::emulator::{Dir, Emulator, LinkConfig};
use cclab_net::ip::{build_udp, inspect};
use cclab_net::wire::{Body, Repr};
use cclab_transport::DataSegment;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Frame {
    Random(Vec<u8>),
    Ours {
        fwd: u32,
        payload: u16,
        flips: Vec<(usize, u8)>,
        cut: Option<usize>,
        tos: u8,
    },
}

fn frame() -> impl Strategy<Value = Frame> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..80).prop_map(Frame::Random),
        (
            0u32..1 << 24,
            0u16..1400,
            proptest::collection::vec((any::<usize>(), any::<u8>()), 0..3),
            proptest::option::of(any::<usize>()),
            0u8..4
        )
            .prop_map(|(fwd, payload, flips, cut, tos)| Frame::Ours {
                fwd,
                payload,
                flips,
                cut,
                tos
            }),
    ]
}

fn bytes(f: &Frame) -> Vec<u8> {
    match f {
        Frame::Random(b) => b.clone(),
        Frame::Ours {
            fwd,
            payload,
            flips,
            cut,
            tos,
        } => {
            let r = Repr {
                flow_id: 1,
                body: Body::Data(DataSegment {
                    seq: 1,
                    payload: *payload as u32,
                    fwd_field: *fwd,
                    ect: *tos != 0,
                    ..Default::default()
                }),
            };
            let mut p = build_udp(
                [10, 77, 0, 1],
                [10, 77, 0, 2],
                5000,
                40000,
                *tos,
                &r.to_vec(),
            );
            let n = p.len();
            for (i, x) in flips {
                p[i % n] ^= x;
            }
            if let Some(c) = cut {
                p.truncate(c % (n + 1));
            }
            p
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn frames_never_panic_and_are_accounted_for(
        frames in proptest::collection::vec((frame(), 0u64..200_000, any::<bool>()), 10),
    ) {
        let mut fwd = LinkConfig::droptail(10e6, 1_000_000, 3);
        fwd.loss = 0.1;
        fwd.loss_data_only = false;
        let rev = LinkConfig::droptail(10e6, 1_000_000, 3);
        let mut e = Emulator::new(fwd, rev, 7).unwrap();
        e.add_flow_delay(40000, 500_000, 0, false);
        let mut now = 0;
        let mut out = 0u64;
        for (f, dt, reverse) in &frames {
            now += dt;
            let dir = if *reverse { Dir::Rev } else { Dir::Fwd };
            e.on_packet(dir, now, bytes(f));
            while let Some((_, b, _)) = e.poll_output(now) {
                prop_assert!(inspect(&b).is_ok());
                out += 1;
                e.recycle(b);
            }
        }
        // drain everything
        while let Some(t) = e.next_deadline() {
            while let Some((_, b, _)) = e.poll_output(t) {
                prop_assert!(inspect(&b).is_ok());
                out += 1;
                e.recycle(b);
            }
        }
        let (cf, cr) = (e.counters(Dir::Fwd), e.counters(Dir::Rev));
        let refused = e.ingress.malformed + e.ingress.non_ipv4;
        prop_assert_eq!(cf.arrivals + cr.arrivals + refused, 10);
        for c in [cf, cr] {
            prop_assert_eq!(c.arrivals, c.random_drops + c.queue_drops + c.departures);
            prop_assert_eq!(c.delivered, c.departures);
        }
        prop_assert_eq!(out, cf.delivered + cr.delivered);
    }
}
