"""The measuring kit smoke, bench and observe share: one streamed request's URL and body (request), the aiohttp
client with its raw stamps (client), the SSE scan (sse) and the per-request records made from it (record); the
/metrics parser and counter rules (metrics), percentiles and summaries (summary), token attribution (attribution);
offering requests under a load model (arrivals, vLLM's schedule; dispatch, closed- or open-loop) and the
measurement window around them (window: scrape, dispatch, scrape).
"""
