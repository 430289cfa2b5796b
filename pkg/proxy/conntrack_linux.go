package proxy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// ctnetlink, from linux/netfilter/nfnetlink_conntrack.h: the message
// types and the attributes of an IPv4 tuple, which is all ClearFlows
// reads and writes.
const (
	ctMsgNew    = 0 // IPCTNL_MSG_CT_NEW: an entry, in dumps
	ctMsgGet    = 1 // IPCTNL_MSG_CT_GET
	ctMsgDelete = 2 // IPCTNL_MSG_CT_DELETE

	ctaTupleOrig  = 1  // CTA_TUPLE_ORIG
	ctaTupleReply = 2  // CTA_TUPLE_REPLY
	ctaZone       = 18 // CTA_ZONE

	ctaTupleIP    = 1 // CTA_TUPLE_IP
	ctaTupleProto = 2 // CTA_TUPLE_PROTO
	ctaTupleZone  = 3 // CTA_TUPLE_ZONE

	ctaIPv4Src = 1 // CTA_IP_V4_SRC
	ctaIPv4Dst = 2 // CTA_IP_V4_DST

	ctaProtoNum     = 1 // CTA_PROTO_NUM
	ctaProtoSrcPort = 2 // CTA_PROTO_SRC_PORT
	ctaProtoDstPort = 3 // CTA_PROTO_DST_PORT
)

var ipProtocols = map[uint8]v1.Protocol{
	unix.IPPROTO_TCP:  v1.ProtocolTCP,
	unix.IPPROTO_UDP:  v1.ProtocolUDP,
	unix.IPPROTO_SCTP: v1.ProtocolSCTP,
}

// netlinkConntrack is the Conntrack of the network namespace of the
// calling thread (the host's, for the agent), over ctnetlink, as the
// conntrack tool and kube-proxy (through vishvananda/netlink) do it: one
// dump of the IPv4 entries, filtered here, and a delete by original
// tuple for each entry to go. Needs CAP_NET_ADMIN.
type netlinkConntrack struct{}

func newConntrack() Conntrack { return netlinkConntrack{} }

// ctEntry is the part of a conntrack entry ClearFlows needs: both tuples
// and the zone, which a delete must repeat to find the entry.
type ctEntry struct {
	orig, reply ctTuple
	zone        []byte // CTA_ZONE as dumped, nil for zone 0
}

type ctTuple struct {
	src, dst     netip.Addr
	proto        uint8
	sport, dport uint16
	zone         []byte // CTA_TUPLE_ZONE as dumped
}

func (e *ctEntry) flow() Flow {
	return Flow{
		Protocol: ipProtocols[e.orig.proto],
		Dst:      netip.AddrPortFrom(e.orig.dst, e.orig.dport),
		Endpoint: netip.AddrPortFrom(e.reply.src, e.reply.sport),
	}
}

func (netlinkConntrack) ClearFlows(ctx context.Context, filters []FlowFilter) (int, error) {
	if len(filters) == 0 {
		return 0, nil
	}
	m := newFlowMatcher(filters)
	// A socket per call, in the caller's namespace: calls are rare (a UDP
	// service lost endpoints, or a full sync).
	conn, err := netlink.Dial(unix.NETLINK_NETFILTER, nil)
	if err != nil {
		return 0, fmt.Errorf("conntrack: open netfilter netlink socket: %w", err)
	}
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(d); err != nil {
			return 0, fmt.Errorf("conntrack: set deadline: %w", err)
		}
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	entries, err := dumpConntrack(conn)
	if err != nil {
		return 0, err
	}
	deleted := 0
	var errs []error
	for i := range entries {
		e := &entries[i]
		if !m.stale(e.flow()) {
			continue
		}
		if err := deleteConntrack(conn, e); err != nil {
			if errors.Is(err, unix.ENOENT) { // expired meanwhile
				continue
			}
			if ctx.Err() != nil {
				return deleted, errors.Join(append(errs, ctx.Err())...)
			}
			errs = append(errs, fmt.Errorf("conntrack: delete %s flow %s -> %s: %w",
				e.flow().Protocol, netip.AddrPortFrom(e.orig.src, e.orig.sport), e.flow().Dst, err))
			continue
		}
		deleted++
	}
	return deleted, errors.Join(errs...)
}

// ctMessage is a ctnetlink request: the nfgenmsg header (family IPv4,
// version 0) followed by attrs.
func ctMessage(msgType uint16, flags netlink.HeaderFlags, attrs []byte) netlink.Message {
	data := append([]byte{unix.AF_INET, unix.NFNETLINK_V0, 0, 0}, attrs...)
	return netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_SUBSYS_CTNETLINK<<8 | msgType), Flags: flags},
		Data:   data,
	}
}

// dumpConntrack lists the IPv4 entries; those of other protocols or
// that do not parse are left out.
func dumpConntrack(conn *netlink.Conn) ([]ctEntry, error) {
	msgs, err := conn.Execute(ctMessage(ctMsgGet, netlink.Request|netlink.Dump, nil))
	if err != nil {
		return nil, fmt.Errorf("conntrack: list entries: %w", err)
	}
	out := make([]ctEntry, 0, len(msgs))
	for _, msg := range msgs {
		if msg.Header.Type&0xff != ctMsgNew || len(msg.Data) < 4 {
			continue
		}
		e, err := parseConntrack(msg.Data[4:])
		if err != nil || !e.orig.dst.Is4() || !e.reply.src.Is4() {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

func parseConntrack(b []byte) (ctEntry, error) {
	var e ctEntry
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return e, err
	}
	for ad.Next() {
		switch ad.Type() {
		case ctaTupleOrig:
			ad.Nested(func(nad *netlink.AttributeDecoder) error { return parseTuple(nad, &e.orig) })
		case ctaTupleReply:
			ad.Nested(func(nad *netlink.AttributeDecoder) error { return parseTuple(nad, &e.reply) })
		case ctaZone:
			e.zone = ad.Bytes()
		}
	}
	return e, ad.Err()
}

func parseTuple(ad *netlink.AttributeDecoder, t *ctTuple) error {
	for ad.Next() {
		switch ad.Type() {
		case ctaTupleIP:
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				for nad.Next() {
					a, ok := netip.AddrFromSlice(nad.Bytes())
					if !ok {
						continue
					}
					switch nad.Type() {
					case ctaIPv4Src:
						t.src = a
					case ctaIPv4Dst:
						t.dst = a
					}
				}
				return nad.Err()
			})
		case ctaTupleProto:
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				for nad.Next() {
					switch nad.Type() {
					case ctaProtoNum:
						t.proto = nad.Uint8()
					case ctaProtoSrcPort:
						t.sport = port16(nad.Bytes())
					case ctaProtoDstPort:
						t.dport = port16(nad.Bytes())
					}
				}
				return nad.Err()
			})
		case ctaTupleZone:
			t.zone = ad.Bytes()
		}
	}
	return ad.Err()
}

func port16(b []byte) uint16 {
	if len(b) != 2 {
		return 0
	}
	return binary.BigEndian.Uint16(b)
}

// deleteConntrack deletes one entry by its original tuple (and zone).
func deleteConntrack(conn *netlink.Conn, e *ctEntry) error {
	ae := netlink.NewAttributeEncoder()
	ae.Nested(ctaTupleOrig, func(t *netlink.AttributeEncoder) error {
		t.Nested(ctaTupleIP, func(ip *netlink.AttributeEncoder) error {
			ip.Bytes(ctaIPv4Src, e.orig.src.AsSlice())
			ip.Bytes(ctaIPv4Dst, e.orig.dst.AsSlice())
			return nil
		})
		t.Nested(ctaTupleProto, func(p *netlink.AttributeEncoder) error {
			p.Uint8(ctaProtoNum, e.orig.proto)
			p.Bytes(ctaProtoSrcPort, binary.BigEndian.AppendUint16(nil, e.orig.sport))
			p.Bytes(ctaProtoDstPort, binary.BigEndian.AppendUint16(nil, e.orig.dport))
			return nil
		})
		if e.orig.zone != nil {
			t.Bytes(ctaTupleZone, e.orig.zone)
		}
		return nil
	})
	if e.zone != nil {
		ae.Bytes(ctaZone, e.zone)
	}
	attrs, err := ae.Encode()
	if err != nil {
		return err
	}
	_, err = conn.Execute(ctMessage(ctMsgDelete, netlink.Request|netlink.Acknowledge, attrs))
	return err
}
