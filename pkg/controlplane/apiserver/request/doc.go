// Package request holds what the API server knows about a request beyond
// its body: the authenticated user (put in the context by authentication
// in front of the server), what the path and method say (Info), and the
// warnings to send back as Warning headers. Every API server package reads
// requests through it.
package request
