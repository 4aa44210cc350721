package handlers

// RateLimitedDetail lets the external tests check a 429's wording without a limiter.
var RateLimitedDetail = rateLimitedDetail
