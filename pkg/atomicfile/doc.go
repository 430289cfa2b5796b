// Package atomicfile replaces a file so that, whatever happens (a crash,
// a power cut), the path holds the old content or the new one, complete
// and on disk: for keys and credentials, where a torn or empty file after
// a crash would lock the cluster out (a lost service account key voids
// every token issued).
package atomicfile
