// Package classroom holds a live class ("room") in memory: its public
// code, its expiry, the followers' fan-out hub, the prediction polls with
// their histograms, the class board's measures and the share check, and
// the join QR code. The HTTP and websocket glue lives in
// internal/server/liveclass; the record of every room is the run archive's
// (internal/archive).
//
// Decisions a reader may look for:
//
//   - A code is 10 symbols from a 30-letter alphabet without look-alikes
//     (about 49 bits), drawn with crypto/rand; it is shown as XXXXX-XXXXX
//     and read case-insensitively with or without the dash.
//   - A follower's socket has one writer goroutine fed by a bounded queue
//     (Hub). Broadcast never blocks: a follower whose queue is full is
//     closed with 1008 "too slow" and forgotten, so one stalled laptop
//     cannot hold up the run or the rest of the class.
//   - A poll is predict-first by construction: once its measurement has
//     started (the run was queued) it refuses predictions for good, even
//     when the run fails; a retry is a new poll.
package classroom
