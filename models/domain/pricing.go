package domain

import (
	"fmt"
	"strconv"
	"strings"
)

// Markup (OP2) is the operator's percentage on a provider's prices. It is
// applied in one place, CustomerPrice, to the catalog's two provider rates
// (per GPU-hour and per root-disk GB-hour) as the stored catalog is read
// (picker and quotes alike), so every figure a customer sees or pays is
// computed from marked rates: the picker's machine and cluster prices, the
// quote's breakdown and usdPerHour, and the cluster's locked per-machine rate
// that the ledger charges. The volume rate is Clusterdeck's own, not a
// provider's, and a private offer's price is final: neither is marked up.
//
// Rounding rule: each rate is marked up on its own and rounded half up to a
// whole micro-dollar, before any multiplication by GPUs, GB or machines; so
// a machine's price stays GPUs × rate + disk GB × rate and a cluster's stays
// machines × machine price, exactly (O7, Q3, Q6).

// MarkupBP is a markup in basis points: 1 = 0.01 %, 1250 = 12.5 %.
type MarkupBP = int

// MaxMarkupBP bounds a markup (500 %): a typo guard, not a policy.
const MaxMarkupBP MarkupBP = 50_000

// CustomerPrice is a provider rate with markup bp, rounded half up to the
// micro-dollar (see the rounding rule above).
func CustomerPrice(rate Money, bp MarkupBP) Money {
	if bp == 0 || rate <= 0 {
		return rate
	}
	return (rate*Money(10_000+bp) + 5_000) / 10_000
}

// ParsePercent reads a percentage with at most two decimals ("12", "12.5",
// "0.25") as basis points.
func ParsePercent(s string) (MarkupBP, error) {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || !allDigits(whole) || !allDigits(frac) || len(frac) > 2 || len(whole) > 6 {
		return 0, fmt.Errorf("%q is not a percentage like 12 or 12.5", s)
	}
	w, _ := strconv.Atoi(whole)
	f, _ := strconv.Atoi((frac + "00")[:2])
	return w*100 + f, nil
}

// PercentText is bp as a percentage: "12.5%", "0%".
func PercentText(bp MarkupBP) string {
	s := strconv.Itoa(bp/100) + "." + fmt.Sprintf("%02d", bp%100)
	return strings.TrimSuffix(strings.TrimSuffix(strings.TrimRight(s, "0"), "."), ".") + "%"
}
