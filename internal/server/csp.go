package server

// contentSecurityPolicy is sent with every response. The pages load
// only their own scripts, styles, images and sockets: no inline script
// (the theme script is static/theme.js), no eval, no other origin, no
// plugins, no framing. 'wasm-unsafe-eval' lets the exercise worker
// compile yaegi.wasm (it allows WebAssembly compilation only, not eval).
// Styles may be inline: the progress bar sets a width, and a style
// cannot run script. connect-src 'self' covers the same-origin websocket.
const contentSecurityPolicy = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; " +
	"style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
