// A small ns-3 (3.37) dumbbell used to cross-check cclab's simulator and to benchmark against it.
//
// N bulk TCP flows, each sender behind its own access link whose delay sets the flow's RTT, one
// bottleneck link router A -> router B with a drop-tail (or RED) queue of `buffer` packets, receivers
// behind B on zero-delay links. Matched to cclab's defaults: MSS 1448 B with timestamps (1500 B IP
// packets), initial window 10, delayed-ACK count 1, min RTO 200 ms, SACK on.
//
// Prints one JSON object: per-flow goodput over [measureStart, duration], Jain's index, the number of
// events, the wall time of Simulator::Run alone, and the data packets sent on the bottleneck.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <vector>

using namespace ns3;

static uint64_t g_bottleneckTx = 0;
static double g_sojournSum = 0;
static uint64_t g_sojournN = 0;

static void
CountSojourn(double from, Time t)
{
    if (Simulator::Now().GetSeconds() >= from)
    {
        g_sojournSum += t.GetSeconds();
        ++g_sojournN;
    }
}

static void
CountTx(Ptr<const Packet> p)
{
    if (p->GetSize() > 500) // data packets only, not ACKs
    {
        g_bottleneckTx++;
    }
}

// --traceFlow: congestion-state changes, RTO changes and (every 0.5 s) cwnd of one flow, on stderr, so
// that a disagreement with cclab can be read off ns-3's own state machine.
static double g_lastCwndPrint = -1;

static void
TraceCwnd(uint32_t, uint32_t cwnd)
{
    double t = Simulator::Now().GetSeconds();
    if (t - g_lastCwndPrint >= 0.5)
    {
        g_lastCwndPrint = t;
        std::cerr << t << " cwnd " << cwnd << std::endl;
    }
}

static void
TraceState(TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t s)
{
    std::cerr << Simulator::Now().GetSeconds() << " state " << TcpSocketState::TcpCongStateName[s] << std::endl;
}

static void
TraceRto(Time, Time rto)
{
    std::cerr << Simulator::Now().GetSeconds() << " rto " << rto.GetSeconds() << std::endl;
}

static void
TraceSocketState(TcpSocket::TcpStates_t, TcpSocket::TcpStates_t s)
{
    std::cerr << Simulator::Now().GetSeconds() << " tcpstate " << TcpSocket::TcpStateName[s] << std::endl;
}

static std::vector<double>
ParseList(const std::string& s)
{
    std::vector<double> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ','))
    {
        if (!item.empty())
        {
            out.push_back(std::stod(item));
        }
    }
    return out;
}

int
main(int argc, char* argv[])
{
    std::string cc = "TcpNewReno";
    std::string rate = "100Mbps";
    std::string rttsMs = "40,40";
    std::string queue = "droptail";
    uint32_t buffer = 0; // packets; 0 = BDP of the largest RTT
    double duration = 60.0;
    double measureStart = 0.0;
    uint32_t seed = 1;
    uint32_t delAck = 1;
    uint32_t mss = 1448;
    uint32_t initCwnd = 10;
    double minRtoMs = 200.0;
    double startSpread = 0.0; // flows start uniformly in [0, startSpread] s
    int traceFlow = -1;
    uint32_t markK = 0; // > 0: step ECN marking at K packets (RED with MinTh = MaxTh = K, no averaging)

    CommandLine cmd(__FILE__);
    cmd.AddValue("cc", "ns-3 TCP congestion-control TypeId name (TcpNewReno, TcpCubic, ...)", cc);
    cmd.AddValue("rate", "bottleneck rate", rate);
    cmd.AddValue("rtts", "comma-separated flow RTTs in ms", rttsMs);
    cmd.AddValue("queue", "droptail | red | codel | pie | fq_codel", queue);
    cmd.AddValue("buffer", "bottleneck buffer in packets (0 = BDP of the largest RTT)", buffer);
    cmd.AddValue("duration", "simulated seconds", duration);
    cmd.AddValue("measureStart", "start of the measurement window, s", measureStart);
    cmd.AddValue("seed", "RNG run number", seed);
    cmd.AddValue("delAck", "delayed-ACK count", delAck);
    cmd.AddValue("mss", "segment size", mss);
    cmd.AddValue("initCwnd", "initial window, segments", initCwnd);
    cmd.AddValue("minRto", "minimum RTO, ms", minRtoMs);
    cmd.AddValue("startSpread", "flows start uniformly in [0, startSpread] s", startSpread);
    cmd.AddValue("traceFlow", "print this flow's TCP state changes, RTO and cwnd on stderr", traceFlow);
    cmd.AddValue("markK", "step ECN marking at K packets with ECN on in TCP (DCTCP's switch); 0 = off", markK);
    cmd.Parse(argc, argv);

    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    std::vector<double> rtts = ParseList(rttsMs);
    uint32_t n = rtts.size();
    DataRate bw(rate);
    double maxRtt = 0;
    for (double r : rtts)
    {
        maxRtt = std::max(maxRtt, r);
    }
    if (buffer == 0)
    {
        buffer = std::max<uint32_t>(1, (uint32_t)(bw.GetBitRate() * maxRtt / 1000.0 / 8.0 / 1500.0));
    }

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::" + cc));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(initCwnd));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(delAck));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1 << 27));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1 << 27));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(minRtoMs)));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
    if (markK > 0)
    {
        Config::SetDefault("ns3::TcpSocketBase::UseEcn", StringValue("On"));
    }
    if (cc == "TcpBbr")
    {
        // BBR paces; ns-3's TcpBbr turns pacing on itself, this makes it explicit.
        Config::SetDefault("ns3::TcpSocketState::EnablePacing", BooleanValue(true));
    }
    if (cc == "TcpWestwood")
    {
        Config::SetDefault("ns3::TcpWestwood::ProtocolType", EnumValue(TcpWestwood::WESTWOODPLUS));
    }

    NodeContainer senders, receivers, routers;
    senders.Create(n);
    receivers.Create(n);
    routers.Create(2);
    InternetStackHelper stack;
    stack.InstallAll();

    PointToPointHelper bottleneck;
    bottleneck.SetDeviceAttribute("DataRate", DataRateValue(bw));
    bottleneck.SetChannelAttribute("Delay", TimeValue(Seconds(0)));
    bottleneck.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    NetDeviceContainer bdev = bottleneck.Install(routers.Get(0), routers.Get(1));

    // The bottleneck's buffer is a queue disc of `buffer` packets (device queue of 1 packet beneath).
    TrafficControlHelper tch;
    if (markK > 0)
    {
        // DCTCP's switch as ns-3's own DCTCP example builds it: RED on the instantaneous queue (QW = 1)
        // with MinTh = MaxTh = K, ECN marks and no early drops; cclab's droptail `mark_threshold = K`.
        tch.SetRootQueueDisc("ns3::RedQueueDisc",
                             "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, buffer)),
                             "MinTh", DoubleValue(markK),
                             "MaxTh", DoubleValue(markK),
                             "QW", DoubleValue(1.0),
                             "UseEcn", BooleanValue(true),
                             "UseHardDrop", BooleanValue(false),
                             "LinkBandwidth", DataRateValue(bw),
                             "LinkDelay", TimeValue(MilliSeconds(1)));
    }
    else if (queue == "red")
    {
        tch.SetRootQueueDisc("ns3::RedQueueDisc",
                             "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, buffer)),
                             "MinTh", DoubleValue(0.2 * buffer),
                             "MaxTh", DoubleValue(0.8 * buffer),
                             "Gentle", BooleanValue(true),
                             "LinkBandwidth", DataRateValue(bw),
                             "LinkDelay", TimeValue(MilliSeconds(1)));
    }
    else if (queue == "codel")
    {
        // RFC 8289 defaults, as cclab's `codel`: target 5 ms, interval 100 ms, no ECN; MinBytes = one
        // full packet (the RFC's MTU test).
        tch.SetRootQueueDisc("ns3::CoDelQueueDisc",
                             "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, buffer)),
                             "Target", StringValue("5ms"),
                             "Interval", StringValue("100ms"),
                             "MinBytes", UintegerValue(mss + 52));
    }
    else if (queue == "pie")
    {
        // RFC 8033 defaults, as cclab's `pie`: reference 15 ms, update every 15 ms, alpha 0.125,
        // beta 1.25, 150 ms burst allowance, the sojourn-time delay (no departure-rate estimator), the
        // +2 % cap on, derandomization off, no ECN.
        tch.SetRootQueueDisc("ns3::PieQueueDisc",
                             "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, buffer)),
                             "QueueDelayReference", TimeValue(MilliSeconds(15)),
                             "Tupdate", TimeValue(MilliSeconds(15)),
                             "A", DoubleValue(0.125),
                             "B", DoubleValue(1.25),
                             "MaxBurstAllowance", TimeValue(MilliSeconds(150)),
                             "UseDequeueRateEstimator", BooleanValue(false),
                             "UseCapDropAdjustment", BooleanValue(true),
                             "UseDerandomization", BooleanValue(false));
    }
    else if (queue == "fq_codel")
    {
        // RFC 8290 as cclab's `fq_codel`: 1024 flow buckets, quantum one packet, CoDel target 5 ms and
        // interval 100 ms per bucket, overflow drops up to 64 packets from the fattest bucket.
        tch.SetRootQueueDisc("ns3::FqCoDelQueueDisc",
                             "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, buffer)),
                             "Flows", UintegerValue(1024),
                             "Target", StringValue("5ms"),
                             "Interval", StringValue("100ms"),
                             "DropBatchSize", UintegerValue(64));
    }
    else
    {
        tch.SetRootQueueDisc("ns3::FifoQueueDisc",
                             "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, buffer)));
    }
    // Installed before address assignment, so ns-3 does not add its default pfifo_fast here.
    QueueDiscContainer qdiscs = tch.Install(bdev.Get(0));
    // Sojourn time of every packet the queue disc releases inside the measurement window (cclab's
    // mean_queue_delay_s is the same quantity) and the disc's drops over the window.
    qdiscs.Get(0)->TraceConnectWithoutContext("SojournTime", MakeBoundCallback(&CountSojourn, measureStart));
    bdev.Get(0)->TraceConnectWithoutContext("PhyTxBegin", MakeCallback(&CountTx));
    // cclab's link `drops` count the window only: remember the disc's count when the window opens.
    Ptr<QueueDisc> disc = qdiscs.Get(0);
    uint64_t dropsAtStart = 0;
    Simulator::Schedule(Seconds(measureStart),
                        [disc, &dropsAtStart]() { dropsAtStart = disc->GetStats().nTotalDroppedPackets; });

    Ipv4AddressHelper addr;
    addr.SetBase("10.0.0.0", "255.255.255.0");
    addr.Assign(bdev);

    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue("100Gbps"));
    access.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("100000p"));
    std::vector<Ipv4Address> rxAddr;
    for (uint32_t i = 0; i < n; ++i)
    {
        // The whole round-trip propagation delay sits on the sender's access link (both directions).
        access.SetChannelAttribute("Delay", TimeValue(MicroSeconds(rtts[i] * 1000.0 / 2.0)));
        NetDeviceContainer s = access.Install(senders.Get(i), routers.Get(0));
        access.SetChannelAttribute("Delay", TimeValue(Seconds(0)));
        NetDeviceContainer r = access.Install(routers.Get(1), receivers.Get(i));
        std::ostringstream b1, b2;
        b1 << "10.1." << i << ".0";
        b2 << "10.2." << i << ".0";
        addr.SetBase(b1.str().c_str(), "255.255.255.0");
        addr.Assign(s);
        addr.SetBase(b2.str().c_str(), "255.255.255.0");
        rxAddr.push_back(addr.Assign(r).GetAddress(1));
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    Ptr<UniformRandomVariable> u = CreateObject<UniformRandomVariable>();
    std::vector<Ptr<PacketSink>> sinks;
    for (uint32_t i = 0; i < n; ++i)
    {
        uint16_t port = 5000 + i;
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer sa = sink.Install(receivers.Get(i));
        sa.Start(Seconds(0));
        sinks.push_back(DynamicCast<PacketSink>(sa.Get(0)));
        BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(rxAddr[i], port));
        src.SetAttribute("MaxBytes", UintegerValue(0));
        src.SetAttribute("SendSize", UintegerValue(mss * 16));
        ApplicationContainer ca = src.Install(senders.Get(i));
        double start = startSpread > 0 ? u->GetValue(0, startSpread) : 0.0;
        ca.Start(Seconds(start));
        if ((int)i == traceFlow)
        {
            Ptr<BulkSendApplication> app = DynamicCast<BulkSendApplication>(ca.Get(0));
            // The socket exists once the application has started; hook its trace sources right after.
            Simulator::Schedule(Seconds(start) + NanoSeconds(1), [app]() {
                Ptr<Socket> sock = app->GetSocket();
                sock->TraceConnectWithoutContext("CongestionWindow", MakeCallback(&TraceCwnd));
                sock->TraceConnectWithoutContext("CongState", MakeCallback(&TraceState));
                sock->TraceConnectWithoutContext("RTO", MakeCallback(&TraceRto));
                sock->TraceConnectWithoutContext("State", MakeCallback(&TraceSocketState));
            });
        }
    }

    std::vector<uint64_t> atStart(n, 0);
    Simulator::Schedule(Seconds(measureStart), [&]() {
        for (uint32_t i = 0; i < n; ++i)
        {
            atStart[i] = sinks[i]->GetTotalRx();
        }
    });
    std::vector<uint64_t> atEnd(n, 0);
    Simulator::Schedule(Seconds(duration) - NanoSeconds(1), [&]() {
        for (uint32_t i = 0; i < n; ++i)
        {
            atEnd[i] = sinks[i]->GetTotalRx();
        }
    });
    Simulator::Stop(Seconds(duration));
    auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    double window = duration - measureStart;
    double sum = 0, sumsq = 0;
    std::ostringstream flows;
    flows << std::setprecision(10);
    for (uint32_t i = 0; i < n; ++i)
    {
        double g = (atEnd[i] - atStart[i]) * 8.0 / window;
        sum += g;
        sumsq += g * g;
        flows << (i ? "," : "") << "{\"id\":" << i << ",\"rtt\":" << rtts[i] / 1000.0
              << ",\"goodput_bps\":" << g << "}";
    }
    double jain = sumsq > 0 ? sum * sum / (n * sumsq) : 0;
    std::cout << std::setprecision(10) << "{\"cc\":\"" << cc << "\",\"buffer_pkts\":" << buffer
              << ",\"flows\":[" << flows.str() << "],\"jain\":" << jain
              << ",\"events\":" << Simulator::GetEventCount() << ",\"wall_s\":" << wall
              << ",\"bottleneck_packets\":" << g_bottleneckTx
              << ",\"mean_sojourn_s\":" << (g_sojournN ? g_sojournSum / g_sojournN : 0.0)
              << ",\"qdisc_drops\":" << disc->GetStats().nTotalDroppedPackets
              << ",\"qdisc_window_drops\":" << disc->GetStats().nTotalDroppedPackets - dropsAtStart << "}"
              << std::endl;
    Simulator::Destroy();
    return 0;
}
