package classroom

import (
	"crypto/rand"
	"fmt"
	"strings"
)

// Alphabet holds the symbols of a room code: digits and capitals without
// 0, 1, I, L, O and U, which are misread when copied from a projector.
const Alphabet = "23456789ABCDEFGHJKMNPQRSTVWXYZ"

// CodeLen is the number of symbols in a code: 30^10 is about 2^49.
const CodeLen = 10

// NewCode draws a code with crypto/rand, in its canonical form (upper
// case, no dash). Bytes at or above the largest multiple of
// len(Alphabet) are drawn again, so every symbol is equally likely.
func NewCode() (string, error) {
	const limit = 256 / len(Alphabet) * len(Alphabet)
	out := make([]byte, 0, CodeLen)
	buf := make([]byte, 2*CodeLen)
	for len(out) < CodeLen {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("classroom: drawing a room code: %w", err)
		}
		for _, b := range buf {
			if int(b) < limit && len(out) < CodeLen {
				out = append(out, Alphabet[int(b)%len(Alphabet)])
			}
		}
	}
	return string(out), nil
}

// ParseCode reads a code as a person types it: any case, with or without
// the dash, spaces around it ignored. It returns the canonical form.
func ParseCode(s string) (string, error) {
	c := strings.ToUpper(strings.TrimSpace(s))
	if len(c) == CodeLen+1 && c[CodeLen/2] == '-' {
		c = c[:CodeLen/2] + c[CodeLen/2+1:]
	}
	if len(c) != CodeLen {
		return "", fmt.Errorf("%w: %q: a code is %d letters and digits, shown as XXXXX-XXXXX", ErrBadCode, s, CodeLen)
	}
	for _, r := range c {
		if !strings.ContainsRune(Alphabet, r) {
			return "", fmt.Errorf("%w: %q: %q is not used in codes (allowed: %s)", ErrBadCode, s, r, Alphabet)
		}
	}
	return c, nil
}

// FormatCode shows a canonical code as XXXXX-XXXXX.
func FormatCode(c string) string {
	if len(c) != CodeLen {
		return c
	}
	return c[:CodeLen/2] + "-" + c[CodeLen/2:]
}
