package run

import "errors"

// ErrTokenRequired refuses a run (a cell, or a run: quiz's measurement)
// that does not present the instructor token on a server that has one.
// Its text reaches the page as it is: the page recognises it by the
// words "instructor token" and asks for the token again.
var ErrTokenRequired = errors.New("server: this server needs the instructor token to run anything: ask the instructor and enter it when the page asks")
