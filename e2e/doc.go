// Package e2e holds kvlab's end-to-end test: it builds the labserver
// binary, starts it as a real process on a free loopback port, and drives
// the course in headless Chromium the way a student would — the index,
// every lesson, the predictions that unlock the first lesson's cell, one
// run on the server's disk, one quiz checked against that run, and the percentile exercise in the browser's Go interpreter,
// first wrong, then right. Every page it visits is checked for text only
// a bug shows ("null", "undefined", "NaN", a raw "&rsquo;":
// browsertest.CheckText).
//
// `make e2e` runs it with -docs, which also saves the light and dark
// screenshots the README shows into docs/.
package e2e
