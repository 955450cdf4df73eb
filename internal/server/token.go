package server

import (
	"fmt"
	"os"
	"strings"
)

// TokenEnv is the environment variable labserver serve reads the
// instructor token from when neither -token nor -token-file is given.
const TokenEnv = "KVLAB_TOKEN"

// PresenterTokenEnv is the environment variable labserver serve reads
// the presenter token from when neither -presenter-token nor
// -presenter-token-file is given.
const PresenterTokenEnv = "KVLAB_PRESENTER_TOKEN"

// tokenFrom picks the instructor token from its three sources: the
// -token flag (any local user can read it in the process list), the file
// named by -token-file (only who may read the file; the one to prefer),
// or the environment variable TokenEnv (only this user and root, but
// every process labserver starts inherits it). At most one of the flags
// may be given; the environment is read only when neither is.
func tokenFrom(flagToken, file string, getenv func(string) string) (string, error) {
	return secretFrom("-token", flagToken, file, TokenEnv, getenv)
}

// presenterTokenFrom picks the presenter token (-presenter-token,
// -presenter-token-file, PresenterTokenEnv) the way tokenFrom does.
func presenterTokenFrom(flagToken, file string, getenv func(string) string) (string, error) {
	return secretFrom("-presenter-token", flagToken, file, PresenterTokenEnv, getenv)
}

// secretFrom reads a secret from the flag name, the file named by
// name-file, or the environment variable env, in that order; name
// names the flags in errors.
func secretFrom(name, flagToken, file, env string, getenv func(string) string) (string, error) {
	switch {
	case flagToken != "" && file != "":
		return "", fmt.Errorf("%s and %s-file: give one or the other, not both", name, name)
	case flagToken != "":
		return flagToken, nil
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s-file: %w", name, err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return "", fmt.Errorf("%s-file %s: the file is empty; put the token on its first line", name, file)
		}
		if strings.ContainsAny(tok, "\r\n") {
			return "", fmt.Errorf("%s-file %s: the token must be one line", name, file)
		}
		return tok, nil
	}
	return strings.TrimSpace(getenv(env)), nil
}
