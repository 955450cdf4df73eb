package classroom

import (
	"fmt"
	"strings"

	qrcode "github.com/skip2/go-qrcode"
)

// QRSVG draws text (the join URL) as a QR code in SVG: one square per
// dark module, runs of dark modules in a row merged into one rect, on a
// white background with the standard 4-module quiet zone. The same text
// always gives the same bytes. The SVG holds no script and no text.
func QRSVG(text string) ([]byte, error) {
	q, err := qrcode.New(text, qrcode.Medium)
	if err != nil {
		return nil, fmt.Errorf("classroom: QR code of %q: %w", text, err)
	}
	bm := q.Bitmap() // includes the quiet zone
	n := len(bm)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" shape-rendering="crispEdges">`, n, n, 8*n, 8*n)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`, n, n)
	for y, row := range bm {
		for x := 0; x < len(row); {
			if !row[x] {
				x++
				continue
			}
			start := x
			for x < len(row) && row[x] {
				x++
			}
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="1"/>`, start, y, x-start)
		}
	}
	b.WriteString(`</svg>`)
	return []byte(b.String()), nil
}
