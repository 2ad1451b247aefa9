"""Scripts k3deploy ships into pods as text (in the profile ConfigMap) and the pod's own image runs: each one file,
the standard library only, so it runs in the vLLM image the serving pods already pull."""
