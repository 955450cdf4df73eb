// Package suggest finds what a mistyped command or flag name most likely
// meant, for the command line's "did you mean" hints.
package suggest

import (
	"flag"
	"fmt"
	"strings"
)

// Closest returns the name in among nearest to word by edit distance
// (insertions, deletions, substitutions and swaps of two neighbouring
// letters each count one), or "" when none is near enough to be a typo:
// one edit for words of up to four letters, two for longer ones. On a tie
// the first of among wins. Case matters: flags and commands are lower case.
func Closest(word string, among []string) string {
	limit := 1
	if len([]rune(word)) > 4 {
		limit = 2
	}
	best, bestD := "", limit+1
	for _, c := range among {
		if c == word {
			continue
		}
		if d := Distance(word, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// Distance is the optimal string alignment distance between a and b: the
// fewest insertions, deletions, substitutions and transpositions of
// adjacent runes that turn a into b, no substring edited twice.
func Distance(a, b string) int {
	s, t := []rune(a), []rune(b)
	// d[i][j] is the distance between s[:i] and t[:j].
	d := make([][]int, len(s)+1)
	for i := range d {
		d[i] = make([]int, len(t)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(s); i++ {
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(s)][len(t)]
}

// FlagError returns err, an error of fs.Parse, with a guess appended when
// it names a flag fs does not define and one of fs's flags is a typo away:
// "flag provided but not defined: -adr (did you mean `-addr`?)".
// Other errors come back unchanged.
func FlagError(fs *flag.FlagSet, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return err
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if m := Closest(name, names); m != "" {
		return fmt.Errorf("%w (did you mean `-%s`?)", err, m)
	}
	return err
}
