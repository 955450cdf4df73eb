package browsertest

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/chromedp"
)

// AX returns the accessible name and description Chromium computes for
// the first element sel matches (waiting for it to exist): what a screen
// reader announces when the element gets focus. It reads the browser's
// accessibility tree, so a label that only looks right (a visually
// nearby question, an aria-labelledby naming a missing id) is caught.
func AX(ctx context.Context, sel string) (name, description string, err error) {
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSS(sel)))
	if err != nil {
		return "", "", fmt.Errorf("accessibility of %s: %w", sel, err)
	}
	fetch := false
	res, err := chromedp.Call(ctx, accessibility.GetPartialAXTree, accessibility.GetPartialAXTreeParams{
		BackendNodeID: nodes[0].BackendNodeID, FetchRelatives: &fetch,
	})
	if err != nil {
		return "", "", fmt.Errorf("accessibility of %s: %w", sel, err)
	}
	if len(res.Nodes) == 0 {
		return "", "", fmt.Errorf("accessibility of %s: no node in the accessibility tree", sel)
	}
	return axString(res.Nodes[0].Name), axString(res.Nodes[0].Description), nil
}

// axString is an accessibility value as text ("" when absent).
func axString(v *accessibility.Value) string {
	if v == nil || len(v.Value) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(v.Value, &s) != nil {
		return string(v.Value)
	}
	return s
}
