package endpointslice

import (
	"cmp"
	"maps"
	"slices"

	discovery "k8s.io/api/discovery/v1"
)

// fill plans the slices of one set of ports, as upstream's
// reconcileByPortMapping, so that an update touches as few slices as it
// can:
//
//  1. existing slices keep the endpoints still desired (rewritten where
//     they changed) and lose the others; a slice left empty is deleted;
//  2. new endpoints go first into slices written anyway, fullest first;
//  3. then into the unchanged slice they fit best, or new slices.
func (r *reconciler) fill(existing []*discovery.EndpointSlice, desired endpointSet, at discovery.AddressType, ports []discovery.EndpointPort) plan {
	byName := map[string]*discovery.EndpointSlice{}
	unchanged, toUpdate := map[string]bool{}, map[string]bool{}
	var p plan
	for _, s := range existing {
		byName[s.Name] = s
		kept, rewritten := keepDesired(s, desired)
		labels, labelsChanged := sliceLabels(s, r.svc)
		switch {
		case (rewritten || len(kept) != len(s.Endpoints)) && len(kept) == 0:
			p.delete = append(p.delete, s)
		case rewritten || len(kept) != len(s.Endpoints) || labelsChanged:
			c := s.DeepCopy()
			c.Endpoints, c.Labels = kept, labels
			byName[s.Name], toUpdate[s.Name] = c, true
		default:
			unchanged[s.Name] = true
		}
	}
	// 2. Top up the slices being written anyway, fullest first.
	if len(desired) > 0 && len(toUpdate) > 0 {
		for _, s := range fullestFirst(byName, toUpdate) {
			s.Endpoints = append(s.Endpoints, desired.popSorted(r.c.maxPerSlice-len(s.Endpoints))...)
		}
	}
	// 3. The rest: into the best-fitting unchanged slice, else new ones.
	for len(desired) > 0 {
		var s *discovery.EndpointSlice
		if len(desired) < r.c.maxPerSlice && len(unchanged) > 0 {
			s = bestFit(byName, unchanged, len(desired), r.c.maxPerSlice)
		}
		if s == nil {
			s = newSlice(r.svc, at, ports)
		} else {
			s = s.DeepCopy()
			byName[s.Name] = s
			delete(unchanged, s.Name)
			toUpdate[s.Name] = true
		}
		s.Endpoints = append(s.Endpoints, desired.popSorted(r.c.maxPerSlice-len(s.Endpoints))...)
		if s.Name == "" {
			p.create = append(p.create, s)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(toUpdate)) {
		p.update = append(p.update, byName[name])
	}
	return p
}

// keepDesired returns the endpoints of s still desired, in their desired
// form, taking them out of desired; rewritten tells whether any changed.
func keepDesired(s *discovery.EndpointSlice, desired endpointSet) (kept []discovery.Endpoint, rewritten bool) {
	kept = []discovery.Endpoint{}
	for i := range s.Endpoints {
		got := desired.take(&s.Endpoints[i])
		if got == nil {
			continue
		}
		kept = append(kept, *got)
		if !sameBeyondKey(got, &s.Endpoints[i]) {
			rewritten = true
		}
	}
	return kept, rewritten
}

func fullestFirst(byName map[string]*discovery.EndpointSlice, names map[string]bool) []*discovery.EndpointSlice {
	out := make([]*discovery.EndpointSlice, 0, len(names))
	for _, name := range slices.Sorted(maps.Keys(names)) {
		out = append(out, byName[name])
	}
	slices.SortStableFunc(out, func(a, b *discovery.EndpointSlice) int { return cmp.Compare(len(b.Endpoints), len(a.Endpoints)) })
	return out
}

// bestFit is the unchanged slice that n more endpoints fill closest to
// full, or nil if none has room.
func bestFit(byName map[string]*discovery.EndpointSlice, names map[string]bool, n, limit int) *discovery.EndpointSlice {
	var best *discovery.EndpointSlice
	bestLeft := limit
	for _, name := range slices.Sorted(maps.Keys(names)) {
		s := byName[name]
		if left := limit - n - len(s.Endpoints); left >= 0 && left < bestLeft {
			best, bestLeft = s, left
		}
	}
	return best
}
