// Package metricstest reads metrics back from a registry in tests:
// counters' values and histograms' sample counts, summed over the series
// whose labels match. (component-base's testutil would pull a module the
// project does not use.)
package metricstest
