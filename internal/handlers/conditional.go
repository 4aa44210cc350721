package handlers

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/payments-api/payments-api/internal/domain"
)

// etag is the strong entity tag of a versioned resource. The version changes with every
// write, so the tag changes exactly when the representation does.
func etag(version int32) string { return fmt.Sprintf(`"v%d"`, version) }

// entityTags splits an If-Match / If-None-Match value ("*", or a list of tags) into tags.
func entityTags(header string) (tags []string, any bool) {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" {
			return nil, true
		}
		if t != "" {
			tags = append(tags, t)
		}
	}
	return tags, false
}

// ifMatch turns If-Match into a precondition with RFC 9110's strong comparison: a weak tag
// (W/"v3") never matches, and neither does a tag this server did not issue.
func ifMatch(header string) domain.Precondition {
	tags, any := entityTags(header)
	pre := domain.Precondition{Any: any, Versions: []int32{}}
	for _, t := range tags {
		if v, ok := versionOf(t); ok {
			pre.Versions = append(pre.Versions, v)
		}
	}
	return pre
}

// ifNoneMatch reports whether If-None-Match matches the current version, with RFC 9110's
// weak comparison (W/"v3" matches "v3").
func ifNoneMatch(header string, version int32) bool {
	tags, any := entityTags(header)
	if any {
		return true
	}
	for _, t := range tags {
		if v, ok := versionOf(strings.TrimPrefix(t, "W/")); ok && v == version {
			return true
		}
	}
	return false
}

func versionOf(tag string) (int32, bool) {
	digits, ok := strings.CutPrefix(tag, `"v`)
	if !ok {
		return 0, false
	}
	digits, ok = strings.CutSuffix(digits, `"`)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(digits, 10, 32)
	return int32(v), err == nil
}
