package nodeipam

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
)

// maxBlockBits bounds the number of node CIDRs (2^24) so that the bitmap
// stays small (2 MiB); upstream bounds IPv6 the same way (at 2^16).
const maxBlockBits = 24

// ErrNoCIDRsRemaining is upstream's error for an exhausted range.
var ErrNoCIDRsRemaining = errors.New("CIDR allocation failed; there are no remaining CIDRs left to allocate in the accepted range")

// CIDRSet hands out the blocks of one IPv4 cluster CIDR. It is safe for
// concurrent use.
type CIDRSet struct {
	cluster  netip.Prefix
	maskSize int
	blocks   int

	mu   sync.Mutex
	used []uint64 // bit i: block i is taken
	next int      // where the next search starts, so released blocks are reused last
	free int
}

// NewCIDRSet splits cluster into blocks of maskSize bits.
func NewCIDRSet(cluster netip.Prefix, maskSize int) (*CIDRSet, error) {
	if !cluster.Addr().Is4() {
		return nil, fmt.Errorf("cluster CIDR %s is not IPv4", cluster)
	}
	cluster = cluster.Masked()
	switch diff := maskSize - cluster.Bits(); {
	case maskSize > 32:
		return nil, fmt.Errorf("node CIDR mask size %d is longer than an IPv4 address", maskSize)
	case diff < 0:
		return nil, fmt.Errorf("node CIDR mask size %d is shorter than the cluster CIDR's prefix (%s)", maskSize, cluster)
	case diff > maxBlockBits:
		return nil, fmt.Errorf("node CIDR mask size %d splits %s into more than 2^%d blocks", maskSize, cluster, maxBlockBits)
	}
	n := 1 << (maskSize - cluster.Bits())
	return &CIDRSet{cluster: cluster, maskSize: maskSize, blocks: n, used: make([]uint64, (n+63)/64), free: n}, nil
}

// Free is how many blocks are left.
func (s *CIDRSet) Free() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.free
}

// AllocateNext takes the next free block after the last one allocated,
// wrapping around, as upstream's.
func (s *CIDRSet) AllocateNext() (netip.Prefix, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free == 0 {
		return netip.Prefix{}, ErrNoCIDRsRemaining
	}
	for i := range s.blocks {
		b := (s.next + i) % s.blocks
		if !s.isSet(b) {
			s.set(b, true)
			s.next = (b + 1) % s.blocks
			return s.block(b), nil
		}
	}
	return netip.Prefix{}, ErrNoCIDRsRemaining // unreachable while free is right
}

// Occupy marks every block that overlaps cidr as used (a block of another
// size occupies all the blocks it touches, as upstream's Occupy).
func (s *CIDRSet) Occupy(cidr netip.Prefix) error { return s.mark(cidr, true) }

// Release marks every block that overlaps cidr as free.
func (s *CIDRSet) Release(cidr netip.Prefix) error { return s.mark(cidr, false) }

func (s *CIDRSet) mark(cidr netip.Prefix, used bool) error {
	first, last, err := s.span(cidr)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for b := first; b <= last; b++ {
		s.set(b, used)
	}
	return nil
}

// span is the range of block indexes that cidr overlaps.
func (s *CIDRSet) span(cidr netip.Prefix) (first, last int, err error) {
	if !cidr.IsValid() || !cidr.Addr().Is4() {
		return 0, 0, fmt.Errorf("CIDR %s is not IPv4", cidr)
	}
	cidr = cidr.Masked()
	if !s.cluster.Overlaps(cidr) {
		return 0, 0, fmt.Errorf("CIDR %s is outside the cluster CIDR %s", cidr, s.cluster)
	}
	if cidr.Bits() <= s.cluster.Bits() {
		return 0, s.blocks - 1, nil // it covers the whole cluster CIDR
	}
	lo := s.index(cidr.Addr())
	hi := s.index(lastAddr(cidr))
	return lo, hi, nil
}

// index is the block that holds addr (an address inside the cluster CIDR).
func (s *CIDRSet) index(addr netip.Addr) int {
	off := ipv4(addr) - ipv4(s.cluster.Addr())
	return int(off >> (32 - s.maskSize))
}

// block is the CIDR of block b.
func (s *CIDRSet) block(b int) netip.Prefix {
	v := ipv4(s.cluster.Addr()) + uint32(b)<<(32-s.maskSize)
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], v)
	return netip.PrefixFrom(netip.AddrFrom4(a), s.maskSize)
}

func (s *CIDRSet) isSet(b int) bool { return s.used[b/64]&(1<<(b%64)) != 0 }

// set flips bit b and keeps the free count in step.
func (s *CIDRSet) set(b int, used bool) {
	if s.isSet(b) == used {
		return
	}
	if used {
		s.used[b/64] |= 1 << (b % 64)
		s.free--
	} else {
		s.used[b/64] &^= 1 << (b % 64)
		s.free++
	}
}

func ipv4(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

// lastAddr is the highest address of an IPv4 prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], ipv4(p.Addr())|^uint32(0)>>p.Bits())
	return netip.AddrFrom4(a)
}
