// Package room is the live class: a presenter shows one lesson a section
// at a time to followers who joined with the room's code.
//
// So far it holds the room's leaves: a lesson cut into the sections the
// presenter moves through (sections.go), and what a probe result hides
// once the server serves others than its own user (redact.go). The
// registry, its API and the follower socket are still package server's.
package room
