package quiz

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Numbers as people write them. A reader may group digits with spaces,
// '_' or commas and may write the decimal separator as '.' or ','. A
// comma is read as a decimal separator only where it can be nothing
// else, and as a thousands separator only where it cannot be a decimal
// one; where it could be either ("1,234") the answer is refused with a
// message that says how to write it. The page's parseNumber (static/dom.js)
// follows the same rules; both are held to testdata/numbers.json.
//
//	0,95       0.95   one comma, not followed by exactly three digits
//	0,950      0.95   a group of thousands never follows a lone 0
//	1234,567   1234.567  a group before a thousands comma has 1 to 3 digits
//	12,500,000 12500000  two commas: grouping
//	1,234.5    1234.5    a comma before the point: grouping
//	1.234,5    1234.5    a point before the comma: the comma is decimal
//	1,234      refused: 1234 or 1.234?

// plainNumber is what is left once separators are resolved: what both
// strconv.ParseFloat and the page's Number() read the same way.
var plainNumber = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// groupedInt is an integer part grouped by a separator in threes.
var groupedInt = regexp.MustCompile(`^[+-]?[0-9]{1,3}(,[0-9]{3})+$`)

// ParseNumber reads a student's numeric answer: an optional sign, digits
// (grouped with spaces, '_' or commas), a fraction after '.' or ',', an
// optional exponent, and optionally the quiz unit (or a trailing x or ×)
// after it. See the table above for how commas are read.
func ParseNumber(s, unit string) (float64, error) {
	t := strings.TrimSpace(s)
	if unit != "" {
		t = strings.TrimSpace(strings.TrimSuffix(t, unit))
	}
	t = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(t, "x"), "×"))
	t = strings.NewReplacer("_", "", " ", "", "\u00a0", "", "\u202f", "").Replace(t)
	t, err := resolveCommas(s, t)
	if err != nil {
		return 0, err
	}
	if !plainNumber.MatchString(t) {
		return 0, fmt.Errorf("%w: %q is not a number (write e.g. 12.5, 0,95 or 12500)", ErrBadAnswer, s)
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%w: %q is not a number (write e.g. 12.5, 0,95 or 12500)", ErrBadAnswer, s)
	}
	return f, nil
}

// resolveCommas rewrites t (s without its unit and spaces) with its
// commas resolved: dropped where they group thousands, a '.' where one is
// the decimal separator. s is the answer as given, for the error.
func resolveCommas(s, t string) (string, error) {
	mant, exp := t, ""
	if i := strings.IndexAny(t, "eE"); i >= 0 {
		mant, exp = t[:i], t[i:]
	}
	commas := strings.Count(mant, ",")
	if commas == 0 {
		return t, nil // a comma in the exponent fails as not a number
	}
	dot := strings.LastIndex(mant, ".")
	lastComma := strings.LastIndex(mant, ",")
	switch {
	case dot > lastComma: // 1,234.5: the commas group the integer part
		if !groupedInt.MatchString(mant[:dot]) {
			return "", badGrouping(s)
		}
		return strings.ReplaceAll(mant, ",", "") + exp, nil
	case dot >= 0: // 1.234,5: the points group, the comma is decimal
		whole := strings.ReplaceAll(mant[:lastComma], ".", ",")
		if commas > 1 || !groupedInt.MatchString(whole) {
			return "", badGrouping(s)
		}
		return strings.ReplaceAll(whole, ",", "") + "." + mant[lastComma+1:] + exp, nil
	case commas > 1: // 12,500,000
		if !groupedInt.MatchString(mant) {
			return "", badGrouping(s)
		}
		return strings.ReplaceAll(mant, ",", "") + exp, nil
	}
	whole, frac := mant[:lastComma], mant[lastComma+1:]
	digits := strings.TrimLeft(whole, "+-")
	if len(frac) != 3 || digits == "" || strings.HasPrefix(digits, "0") || len(digits) > 3 {
		return whole + "." + frac + exp, nil // 0,95 · 12,5 · ,5 · 0,950 · 1234,567
	}
	return "", fmt.Errorf("%w: %q could mean %s%s or %s.%s%s: write %s%s (no comma) for the whole number, or %s.%s%s with a point for the decimal", ErrBadAnswer, s,
		whole, frac+exp, whole, frac, exp, whole, frac+exp, whole, frac, exp)
}

// badGrouping is the error for commas or points that group digits other
// than in threes.
func badGrouping(s string) error {
	return fmt.Errorf("%w: %q is not a number: group digits in threes (12,500,000 or 12 500 000) or write them without separators; the decimal separator may be . or ,", ErrBadAnswer, s)
}
