package api_test

import (
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bojanz/currency"
	"github.com/payments-api/payments-api/internal/api"
)

var update = flag.Bool("update", false, "rewrite the Currency enum in api/openapi.yaml from the ISO 4217 list")

// specPath is the hand-edited contract; internal/api/openapi.yaml is its generated copy.
const specPath = "../../api/openapi.yaml"

// currencyEnum finds the Currency schema's enum, a YAML flow sequence.
var currencyEnum = regexp.MustCompile(`(?s)(\n    Currency:\n[^\n]*(?:\n      [^\n]*)*?\n      enum: \[)([^\]]*)(\])`)

// TestCurrencyEnumIsISO4217 keeps the spec's list of accepted currencies equal to the ISO
// 4217 codes in github.com/bojanz/currency (ISO's current list, through CLDR), lowercase as
// they are on the wire. The request validator enforces the enum, so this list is what the
// server accepts. After upgrading the library, run `go test ./internal/api -update` and then
// `go generate ./...`.
func TestCurrencyEnumIsISO4217(t *testing.T) {
	want := isoCodes()
	if *update {
		rewriteEnum(t, want)
		t.Logf("rewrote %s; run go generate ./... to embed it", specPath)
		return
	}
	spec, err := api.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range spec.Components.Schemas["Currency"].Value.Enum {
		got = append(got, v.(string))
	}
	if !slices.Equal(got, want) {
		t.Errorf("the spec's Currency enum (%d codes) differs from ISO 4217 (%d codes): run go test ./internal/api -update && go generate ./...\nspec: %v\niso:  %v",
			len(got), len(want), got, want)
	}
}

func isoCodes() []string {
	codes := currency.GetCurrencyCodes()
	lower := make([]string, len(codes))
	for i, c := range codes {
		lower[i] = strings.ToLower(c)
	}
	slices.Sort(lower)
	return lower
}

// rewriteEnum writes codes into the spec's Currency enum, fifteen to a line.
func rewriteEnum(t *testing.T, codes []string) {
	t.Helper()
	spec, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	if !currencyEnum.Match(spec) {
		t.Fatalf("%s: no enum in the Currency schema to rewrite", specPath)
	}
	var list strings.Builder
	for i := 0; i < len(codes); i += 15 {
		list.WriteString("\n          " + strings.Join(codes[i:min(i+15, len(codes))], ", ") + ",")
	}
	body := strings.TrimSuffix(list.String(), ",")
	spec = currencyEnum.ReplaceAll(spec, []byte("${1}"+strings.ReplaceAll(body, "$", "$$")+"${3}"))
	if err := os.WriteFile(specPath, spec, 0o644); err != nil {
		t.Fatal(err)
	}
}
