package grade

import (
	"errors"
	"fmt"

	"kvlab/internal/quiz"
)

// Kind says what an Error is about, so that a caller can answer it
// without reading its message.
type Kind int

const (
	// BadAnswer: the answer is not a number in the quiz's unit, or not one
	// of its choices. It is not a wrong answer: the reader fixes the input
	// and tries again. The Error wraps quiz.ErrBadAnswer.
	BadAnswer Kind = iota + 1
	// BadRequest: the runs were named wrongly (no browser, an id twice,
	// two runs for one line, more ids than a cell may have).
	BadRequest
	// Ungradable: the runs cannot answer the quiz (none sent, not of its
	// cell, of an edited cell, too few rounds, or results the answer
	// expression cannot compute from).
	Ungradable
	// Internal: the server failed (the archive, or a lesson whose quiz
	// reads a cell it does not have).
	Internal
)

// Error is every error this package returns.
type Error struct {
	Kind Kind
	Msg  string // what the reader reads, without a package prefix
	Err  error  // the cause, when there is one
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// errorf builds an *Error of kind k.
func errorf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// KindOf is err's Kind: Internal for an error that is not an *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// answerError wraps an error of package quiz: BadAnswer when it is about
// the answer's form, with a message the reader reads under the quiz ("Your
// answer ..."), Ungradable otherwise.
func answerError(err error) *Error {
	if errors.Is(err, quiz.ErrBadAnswer) {
		return &Error{Kind: BadAnswer, Msg: AnswerMessage(err), Err: err}
	}
	return &Error{Kind: Ungradable, Msg: err.Error(), Err: err}
}
