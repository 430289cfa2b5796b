package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// RouteProtocol is the route protocol (rtm_protocol) that marks the routes
// Routes owns: it lists, replaces and deletes only routes carrying it, so
// routes of the administrator, of DHCP or of another network agent are
// never touched. 78 is in neither the kernel's RTPROT_* list nor
// iproute2's rt_protos, and no network agent we know uses it (Calico
// uses 80); values up to RTPROT_STATIC (4) mean something to the kernel.
// `ip route show proto 78` lists our routes.
const RouteProtocol uint8 = 78

// RoutesConfig configures Routes.
type RoutesConfig struct {
	// NetNS is an open descriptor of the network namespace to manage; 0
	// means the namespace of the calling thread (the host's, for the
	// agent). The caller keeps it open until Close.
	NetNS int
	// Protocol marks our routes. Default: RouteProtocol. Must be above
	// RTPROT_STATIC.
	Protocol uint8
	// Table is the routing table. Default: main (254).
	Table  uint32
	Logger *slog.Logger // default: slog.Default()
}

// Routes applies host-gw route plans over rtnetlink.
type Routes struct {
	netns int
	proto uint8
	table uint32
	log   *slog.Logger

	mu     sync.Mutex    // one operation at a time on conn, so deadlines do not mix
	conn   *netlink.Conn // nil until the first operation and after an interrupted one
	closed bool
}

// NewRoutes checks cfg. The route netlink socket in cfg.NetNS is opened
// by the first operation, so a Routes never used holds nothing; Close
// closes it.
func NewRoutes(cfg RoutesConfig) (*Routes, error) {
	if cfg.Protocol == 0 {
		cfg.Protocol = RouteProtocol
	}
	// 0 would match every protocol on delete; 1-4 belong to the kernel.
	if cfg.Protocol <= unix.RTPROT_STATIC {
		return nil, fmt.Errorf("routes: protocol %d is reserved; use one above %d", cfg.Protocol, unix.RTPROT_STATIC)
	}
	if cfg.Table == 0 {
		cfg.Table = unix.RT_TABLE_MAIN
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Routes{netns: cfg.NetNS, proto: cfg.Protocol, table: cfg.Table,
		log: cfg.Logger.With("component", "routes")}, nil
}

func (r *Routes) dial() error {
	conn, err := netlink.Dial(unix.NETLINK_ROUTE, &netlink.Config{NetNS: r.netns})
	if err != nil {
		return fmt.Errorf("open route netlink socket: %w", err)
	}
	r.conn = conn
	return nil
}

// Close closes the netlink socket, if one is open; later operations fail.
func (r *Routes) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.conn == nil {
		return nil
	}
	err := r.conn.Close()
	r.conn = nil
	return err
}

// List returns our routes (those of our protocol in our table), IPv4 and
// IPv6.
func (r *Routes) List(ctx context.Context) ([]NodeRoute, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var routes []NodeRoute
	err := r.withContext(ctx, func() error {
		var err error
		routes, err = r.list()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list routes (protocol %d): %w", r.proto, err)
	}
	return routes, nil
}

// Apply makes our routes equal to plan: it adds the missing routes,
// replaces ours whose gateway changed and deletes ours no longer planned.
// It never replaces a route that is not ours: a planned destination that
// already has a foreign route is reported and left alone. It does all it
// can and returns every failure joined.
func (r *Routes) Apply(ctx context.Context, plan []NodeRoute) error {
	wanted, errs := checkPlan(plan)
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.withContext(ctx, func() error {
		present, err := r.list()
		if err != nil {
			return fmt.Errorf("list routes (protocol %d): %w", r.proto, err)
		}
		ours := map[string]bool{}
		for _, p := range present {
			ours[p.Dst.String()] = true
		}
		add, del := DiffRoutes(wanted, present)
		// Adds first: replacing a changed route in place leaves no gap.
		for _, rt := range add {
			errs = append(errs, r.add(rt, ours[rt.Dst.String()]))
		}
		for _, rt := range del {
			errs = append(errs, r.del(rt))
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}

// checkPlan drops the routes Apply cannot act on, with an error for each:
// incomplete ones, mixed families and a second route to one destination.
func checkPlan(plan []NodeRoute) ([]NodeRoute, []error) {
	var ok []NodeRoute
	var errs []error
	seen := map[string]bool{}
	for _, rt := range plan {
		switch {
		case rt.Dst == nil || rt.Gw == nil:
			errs = append(errs, fmt.Errorf("route %v: destination and gateway are required", rt))
		case (rt.Dst.IP.To4() != nil) != (rt.Gw.To4() != nil):
			errs = append(errs, fmt.Errorf("route %v: destination and gateway are of different IP families", rt))
		case seen[rt.Dst.String()]:
			errs = append(errs, fmt.Errorf("route %v: a second route to %s in the plan", rt, rt.Dst))
		default:
			seen[rt.Dst.String()] = true
			ok = append(ok, rt)
		}
	}
	return ok, errs
}

// withContext makes ctx's deadline and cancellation interrupt netlink
// calls. An interrupted call may leave a reply unread that would confuse
// the next request, so the socket is then replaced.
func (r *Routes) withContext(ctx context.Context, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if r.closed {
		return errors.New("routes: closed")
	}
	if r.conn == nil {
		if err := r.dial(); err != nil {
			return err
		}
	}
	if d, ok := ctx.Deadline(); ok {
		if err := r.conn.SetDeadline(d); err != nil {
			return fmt.Errorf("set netlink deadline: %w", err)
		}
	}
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(done)
		_ = r.conn.SetDeadline(time.Unix(1, 0))
	})
	err := fn()
	if !stop() {
		<-done
		_ = r.conn.Close()
		r.conn = nil
		return errors.Join(err, ctx.Err())
	}
	_ = r.conn.SetDeadline(time.Time{})
	return err
}

func (r *Routes) list() ([]NodeRoute, error) {
	req := netlink.Message{
		Header: netlink.Header{Type: unix.RTM_GETROUTE, Flags: netlink.Request | netlink.Dump},
		Data:   rtMsg{family: unix.AF_UNSPEC}.marshal(),
	}
	msgs, err := r.conn.Execute(req)
	if err != nil {
		return nil, err
	}
	var routes []NodeRoute
	for _, m := range msgs {
		if m.Header.Type != unix.RTM_NEWROUTE {
			continue
		}
		kr, ok, err := parseRoute(m.Data)
		if err != nil {
			return nil, err
		}
		if ok && kr.protocol == r.proto && kr.table == r.table && kr.typ == unix.RTN_UNICAST {
			routes = append(routes, kr.NodeRoute)
		}
	}
	return routes, nil
}

// add creates rt, or replaces our route to its destination when there is
// one. Creating is exclusive so that a foreign route is never replaced
// and, for IPv6, never merged into a multipath route.
func (r *Routes) add(rt NodeRoute, replace bool) error {
	flags := netlink.Request | netlink.Acknowledge | netlink.Create | netlink.Excl
	if replace {
		flags = netlink.Request | netlink.Acknowledge | netlink.Create | netlink.Replace
	}
	msg, err := r.routeMessage(rt, unix.RTM_NEWROUTE, flags, unix.RT_SCOPE_UNIVERSE, unix.RTN_UNICAST)
	if err == nil {
		_, err = r.conn.Execute(msg)
	}
	switch {
	case errors.Is(err, unix.EEXIST):
		return fmt.Errorf("add route %v: a route to %s that is not ours (protocol %d) exists; left alone: %w", rt, rt.Dst, r.proto, err)
	case errors.Is(err, unix.ENETUNREACH):
		return fmt.Errorf("add route %v: gateway %s is not on a directly connected network (host-gw needs the nodes on one link): %w", rt, rt.Gw, err)
	case err != nil:
		return fmt.Errorf("add route %v: %w", rt, err)
	}
	r.log.Info("added route", "dst", rt.Dst.String(), "gateway", rt.Gw.String(), "node", rt.Node, "replaced", replace)
	return nil
}

// del deletes our route rt. The protocol in the request makes the kernel
// match only a route of ours; one already gone is fine.
func (r *Routes) del(rt NodeRoute) error {
	msg, err := r.routeMessage(rt, unix.RTM_DELROUTE, netlink.Request|netlink.Acknowledge, unix.RT_SCOPE_NOWHERE, unix.RTN_UNSPEC)
	if err == nil {
		_, err = r.conn.Execute(msg)
	}
	switch {
	case errors.Is(err, unix.ESRCH):
		return nil
	case err != nil:
		return fmt.Errorf("delete route %v: %w", rt, err)
	}
	r.log.Info("deleted route", "dst", rt.Dst.String(), "gateway", rt.Gw.String())
	return nil
}

func (r *Routes) routeMessage(rt NodeRoute, typ netlink.HeaderType, flags netlink.HeaderFlags, scope, rtype uint8) (netlink.Message, error) {
	family, dst, gw := uint8(unix.AF_INET), rt.Dst.IP.To4(), rt.Gw.To4()
	if dst == nil {
		family, dst, gw = unix.AF_INET6, rt.Dst.IP.To16(), rt.Gw.To16()
	}
	ones, _ := rt.Dst.Mask.Size()
	ae := netlink.NewAttributeEncoder()
	ae.Bytes(unix.RTA_DST, dst)
	if gw != nil { // a multipath route of ours, found by list, has none
		ae.Bytes(unix.RTA_GATEWAY, gw)
	}
	ae.Uint32(unix.RTA_TABLE, r.table)
	attrs, err := ae.Encode()
	if err != nil {
		return netlink.Message{}, err
	}
	m := rtMsg{family: family, dstLen: uint8(ones), table: tableByte(r.table), protocol: r.proto, scope: scope, typ: rtype}
	return netlink.Message{
		Header: netlink.Header{Type: typ, Flags: flags},
		Data:   append(m.marshal(), attrs...),
	}, nil
}

// tableByte is rtm_table: tables above 255 are named only by RTA_TABLE.
func tableByte(t uint32) uint8 {
	if t > 255 {
		return unix.RT_TABLE_UNSPEC
	}
	return uint8(t)
}

// rtMsg is struct rtmsg of <linux/rtnetlink.h>, without rtm_flags (0).
type rtMsg struct {
	family, dstLen, srcLen, tos, table, protocol, scope, typ uint8
}

func (m rtMsg) marshal() []byte {
	b := make([]byte, unix.SizeofRtMsg) // rtm_flags, the last 4 bytes, stay 0
	b[0], b[1], b[2], b[3] = m.family, m.dstLen, m.srcLen, m.tos
	b[4], b[5], b[6], b[7] = m.table, m.protocol, m.scope, m.typ
	return b
}

// kernelRoute is what list needs of an RTM_NEWROUTE message.
type kernelRoute struct {
	NodeRoute
	protocol, typ uint8
	table         uint32
}

// parseRoute decodes an RTM_NEWROUTE message; ok is false for families
// other than IPv4 and IPv6.
func parseRoute(b []byte) (kr kernelRoute, ok bool, err error) {
	if len(b) < unix.SizeofRtMsg {
		return kr, false, fmt.Errorf("short route message (%d bytes)", len(b))
	}
	family, dstLen := b[0], int(b[1])
	kr = kernelRoute{table: uint32(b[4]), protocol: b[5], typ: b[7]}
	var bits int
	switch family {
	case unix.AF_INET:
		bits = 32
	case unix.AF_INET6:
		bits = 128
	default:
		return kr, false, nil
	}
	dst := make(net.IP, bits/8) // a default route has no RTA_DST
	ad, err := netlink.NewAttributeDecoder(b[unix.SizeofRtMsg:])
	if err != nil {
		return kr, false, fmt.Errorf("route message: %w", err)
	}
	for ad.Next() {
		switch ad.Type() {
		case unix.RTA_DST:
			dst = net.IP(ad.Bytes())
		case unix.RTA_GATEWAY:
			kr.Gw = net.IP(ad.Bytes())
		case unix.RTA_TABLE:
			kr.table = ad.Uint32()
		}
	}
	if err := ad.Err(); err != nil {
		return kr, false, fmt.Errorf("route message: %w", err)
	}
	kr.Dst = &net.IPNet{IP: dst, Mask: net.CIDRMask(dstLen, bits)}
	return kr, true, nil
}
