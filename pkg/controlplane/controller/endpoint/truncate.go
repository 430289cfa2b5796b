package endpoint

import (
	"math"

	v1 "k8s.io/api/core/v1"
)

// maxCapacity is the most addresses one Endpoints object holds; beyond it
// consumers are to read EndpointSlices.
const maxCapacity = 1000

func countAddresses(subsets []v1.EndpointSubset) int {
	n := 0
	for _, ss := range subsets {
		n += len(ss.Addresses) + len(ss.NotReadyAddresses)
	}
	return n
}

// truncate cuts ep down to maxCapacity addresses as upstream does: not
// ready ones go first; each subset keeps its share of what remains,
// rounded up (so the last ones may keep fewer). It reports whether it cut.
func truncate(ep *v1.Endpoints) bool {
	ready, notReady := 0, 0
	for _, ss := range ep.Subsets {
		ready += len(ss.Addresses)
		notReady += len(ss.NotReadyAddresses)
	}
	if ready+notReady <= maxCapacity {
		return false
	}
	cutReady := ready > maxCapacity
	budget, total := maxCapacity-ready, notReady
	if cutReady {
		budget, total = maxCapacity, ready
	}
	left := budget
	for i := range ep.Subsets {
		ss := &ep.Subsets[i]
		list := &ss.NotReadyAddresses
		if cutReady {
			list = &ss.Addresses
			ss.NotReadyAddresses = nil
		}
		share := min(int(math.Ceil(float64(len(*list))/float64(total)*float64(budget))), left)
		if len(*list) > share {
			*list = (*list)[:share]
		}
		left -= len(*list)
	}
	return true
}
