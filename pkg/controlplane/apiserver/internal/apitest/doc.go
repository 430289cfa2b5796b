// Package apitest holds test helpers shared by the API server's tests
// and its sub-packages' tests, so that none are copied between them.
package apitest
