package harnesstest

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"kvlab/harness"
)

// ScaleLine returns line with its size budgets multiplied by f (0 < f <= 1):
// -ops, -duration, -keys, -warmup, -trials and -kill's time, where the
// line gives them, each kept at its smallest valid value. Every other
// word stays as given, so the defaults that follow from a budget (-keys
// and -warmup from -ops) follow the scaled one when the line runs. A test
// that runs the course's cells scales them down this way (-short); the
// line and its scaled copy must both parse (harness.ParseSpec).
func ScaleLine(line string, f float64) (string, error) {
	if !(f > 0 && f <= 1) {
		return "", fmt.Errorf("scale %v: must be greater than 0 and at most 1", f)
	}
	s, err := harness.ParseSpec(line, harness.DefaultLimits())
	if err != nil {
		return "", err
	}
	words := strings.Fields(line)
	for i := 0; i < len(words); i++ {
		name, v, hasValue := strings.Cut(strings.TrimLeft(words[i], "-"), "=")
		rule, ok := budgets[name]
		if !ok || !strings.HasPrefix(words[i], "-") {
			continue
		}
		switch {
		case hasValue:
			words[i] = words[i][:len(words[i])-len(v)] + rule(s.Cmd, v, f)
		case i+1 < len(words):
			i++
			words[i] = rule(s.Cmd, words[i], f)
		}
	}
	scaled := strings.Join(words, " ")
	if _, err := harness.ParseSpec(scaled, harness.DefaultLimits()); err != nil {
		return "", fmt.Errorf("scaled by %v: %w", f, err)
	}
	return scaled, nil
}

// The smallest budgets the grammar allows: a probe's are larger, as
// below them its figures are noise (TestScaleLineKeepsTheGrammarsMinimums
// checks these against harness.ParseSpec).
const (
	minOps           = 1
	minProbeOps      = 10
	minDuration      = time.Millisecond
	minProbeDuration = 10 * time.Millisecond
)

// budgets are the flags ScaleLine scales, each with its rule: the value v
// of that flag on a line of command cmd, multiplied by f and kept valid.
var budgets = map[string]func(cmd, v string, f float64) string{
	"ops": func(cmd, v string, f float64) string {
		if cmd == "probe" {
			return scaleInt(v, f, minProbeOps)
		}
		return scaleInt(v, f, minOps)
	},
	"duration": func(cmd, v string, f float64) string {
		if cmd == "probe" {
			return scaleDuration(v, f, minProbeDuration)
		}
		return scaleDuration(v, f, minDuration)
	},
	"keys":   func(_, v string, f float64) string { return scaleInt(v, f, 1) },
	"warmup": func(_, v string, f float64) string { return scaleInt(v, f, 0) },
	"trials": func(_, v string, f float64) string { return scaleInt(v, f, 1) },
	// -kill who@D kills D into the timed region: scaled with the run, a
	// shorter run still kills inside it.
	"kill": func(_, v string, f float64) string {
		who, at, ok := strings.Cut(v, "@")
		if !ok {
			return v
		}
		return who + "@" + scaleDuration(at, f, time.Millisecond)
	},
}

// scaleInt scales an integer budget ("_" may group its digits), to no
// less than lo.
func scaleInt(v string, f float64, lo int64) string {
	n, err := strconv.ParseInt(strings.ReplaceAll(v, "_", ""), 10, 64)
	if err != nil {
		return v
	}
	return strconv.FormatInt(max(int64(math.Round(float64(n)*f)), lo), 10)
}

// scaleDuration scales a duration budget, rounded to the millisecond, to
// no less than lo.
func scaleDuration(v string, f float64, lo time.Duration) string {
	d, err := time.ParseDuration(v)
	if err != nil {
		return v
	}
	return max(time.Duration(float64(d)*f).Round(time.Millisecond), lo).String()
}
