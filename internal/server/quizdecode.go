package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"kvlab/internal/quiz"
)

// decodeQuizRequest reads one POST /api/quiz body. It decodes the body as
// a stream and keeps no more of "results" than the quiz can read: keep
// says, once "lesson" and "quiz" are known, how many results that is
// (the lines of the quiz's cell); until then at most `most` are kept (the
// most lines any cell may have). Results past that are skipped without
// being built, and a body with more than `most` results is refused before
// the rest of it is read. Once "lesson", "quiz" and "answer" are known and
// the results the quiz reads are in, decoding stops there (unread is
// true): the rest of the body is not read, so the page sends
// "prediction" before "results". Unknown fields, a second JSON
// value and a "results" that is not an array are errors.
//
// Changes to the request's fields belong here and in quizRequest.
func decodeQuizRequest(r io.Reader, most int, keep func(lesson, quiz string) int) (req quizRequest, unread bool, err error) {
	dec := json.NewDecoder(r)
	if err = expectDelim(dec, '{'); err != nil {
		return req, false, err
	}
	// text holds the request's plain string fields, by their JSON names.
	text := map[string]*string{"lesson": &req.Lesson, "quiz": &req.Quiz, "answer": &req.Answer,
		"token": &req.Token, "ticket": &req.Ticket, "browser": &req.Browser}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return req, false, err
		}
		key, _ := t.(string)
		if seen[key] {
			return req, false, fmt.Errorf("field %q given twice", key)
		}
		seen[key] = true
		if dst, ok := text[key]; ok {
			if err := dec.Decode(dst); err != nil {
				return req, false, fmt.Errorf("%s: %w", key, err)
			}
			continue
		}
		switch key {
		case "prediction":
			if err := dec.Decode(&req.Prediction); err != nil {
				return req, false, fmt.Errorf("prediction: %w", err)
			}
		case "run_ids":
			if err := decodeRunIDs(dec, most*quiz.MaxRepeat, &req.RunIDs); err != nil {
				return req, false, err
			}
		case "results":
			n := most
			if seen["lesson"] && seen["quiz"] {
				n = min(keep(req.Lesson, req.Quiz), most)
			}
			ready := seen["lesson"] && seen["quiz"] && seen["answer"]
			if req.Results, unread, err = decodeResults(dec, n, most, ready); err != nil || unread {
				return req, unread, err
			}
		default:
			return req, false, fmt.Errorf("json: unknown field %q", key)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return req, false, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return req, false, errors.New("more than one JSON value in the body")
	}
	return req, false, nil
}

// decodeResults reads the "results" array: the first n elements are kept
// as they are, the rest up to most are skipped, and one past most is an
// error. When ready (the request needs nothing more), it stops after the
// first n instead: stopped is true and the rest is left unread. null
// stands for no results.
func decodeResults(dec *json.Decoder, n, most int, ready bool) (out []json.RawMessage, stopped bool, err error) {
	t, err := dec.Token()
	if err != nil {
		return nil, false, err
	}
	if t == nil {
		return nil, false, nil
	}
	if d, ok := t.(json.Delim); !ok || d != '[' {
		return nil, false, fmt.Errorf("results: want an array of results, one per line of the cell, got %v", t)
	}
	for i := 0; dec.More(); i++ {
		switch {
		case i >= n && ready:
			return out, true, nil
		case i >= most:
			return nil, false, fmt.Errorf("results: more than %d, the most lines a cell may have", most)
		case i >= n:
			if err := dec.Decode(&skipValue{}); err != nil {
				return nil, false, fmt.Errorf("results[%d]: %w", i, err)
			}
			continue
		}
		var m json.RawMessage
		if err := dec.Decode(&m); err != nil {
			return nil, false, fmt.Errorf("results[%d]: %w", i, err)
		}
		out = append(out, m)
	}
	return out, false, expectDelim(dec, ']')
}

// decodeRunIDs reads "run_ids": an array of at most `most` run ids (one
// per line of a cell, or per line and round of a repeat: quiz), or null.
func decodeRunIDs(dec *json.Decoder, most int, out *[]int64) error {
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("run_ids: want an array of run ids (whole numbers), one per line of the cell: %w", err)
	}
	if len(*out) > most {
		return fmt.Errorf("run_ids: %d ids; at most %d (a cell's lines, %d runs each)", len(*out), most, quiz.MaxRepeat)
	}
	return nil
}

// skipValue is decoded into to pass over a JSON value without keeping it.
type skipValue struct{}

func (skipValue) UnmarshalJSON([]byte) error { return nil }

func expectDelim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, got %v", want, t)
	}
	return nil
}
