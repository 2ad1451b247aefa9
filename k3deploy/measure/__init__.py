"""Offering requests to an endpoint under a load model, for smoke and bench alike: open-loop arrivals
(arrivals, vLLM's schedule) and the dispatch of a batch closed- or open-loop (dispatch). Knows no HTTP: the
caller's `send` does the request.
"""
