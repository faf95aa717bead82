// Package ingest reads real HTTP access logs (Apache/Nginx Common and Combined
// Log Format, the NASA TSV, CSV; plain or gzip) as streams of requests, keys
// them for a rate limiter, labels them with rules, and compiles them into a
// compact in-memory Traffic: per-key request seconds and labels, per-key
// aggregates, realisations with request times in nanoseconds, and a per-second
// fluid model.Scenario.
//
// Readers stream: memory does not grow with the log, only the compiled
// Traffic does (9 bytes per request plus the keys; about twice that while
// it is being built). Lines are parsed by hand
// over []byte, without regular expressions and without allocating per line.
package ingest
