package models

import (
	"fmt"
	"strconv"
	"strings"
)

// Money is an amount in integer micro-dollars (1 USD = 1,000,000), so
// per-minute proration of prices like $2.49/h stays exact (Q6).
type Money int64

// Micro is one dollar in micro-dollars.
const Micro Money = 1_000_000

// USD formats an amount as dollars with cents for people: "$1,234.56".
// Sub-cent remainders are rounded half away from zero.
func USD(m Money) string {
	neg := m < 0
	if neg {
		m = -m
	}
	cents := (m + 5_000) / 10_000
	whole := strconv.FormatInt(int64(cents/100), 10)
	for i := len(whole) - 3; i > 0; i -= 3 {
		whole = whole[:i] + "," + whole[i:]
	}
	s := fmt.Sprintf("$%s.%02d", whole, cents%100)
	if neg {
		s = "-" + s
	}
	return s
}

// DecimalUSD is the API's money form: a decimal string of dollars exact to the
// micro-dollar, with at least two decimals ("39.84", "2.4905", "0.000139").
func DecimalUSD(m Money) string {
	neg := m < 0
	if neg {
		m = -m
	}
	frac := strings.TrimRight(fmt.Sprintf("%06d", m%Micro), "0")
	for len(frac) < 2 {
		frac += "0"
	}
	s := strconv.FormatInt(int64(m/Micro), 10) + "." + frac
	if neg {
		s = "-" + s
	}
	return s
}

// ParseUSD reads a decimal dollar string ("40", "39.84", "2.4905") exactly.
// More than six decimals, signs, exponents and empty strings are refused.
func ParseUSD(s string) (Money, error) {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "$"))
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" {
		return 0, fmt.Errorf("not a dollar amount")
	}
	if whole == "" {
		whole = "0"
	}
	if !allDigits(whole) || !allDigits(frac) || len(frac) > 6 || len(whole) > 12 {
		return 0, fmt.Errorf("%q is not a dollar amount like 12.50", s)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a dollar amount like 12.50", s)
	}
	f := int64(0)
	if frac != "" {
		f, _ = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
	}
	return Money(w)*Micro + Money(f), nil
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
