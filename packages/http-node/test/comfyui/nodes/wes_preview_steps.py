"""
A test node of WES's real-ComfyUI suite (previews.comfyui.test.ts), loaded from this directory
through --extra-model-paths-config and --whitelist-custom-nodes: ComfyUI itself is unmodified.

ComfyUI sends live preview images only from a progress bar given a preview: the samplers' latent
previewer (latent_preview.py, which needs a model) and SaveImageWebsocket (whose frames are
outputs). This node reports `steps` progress steps through ComfyUI's own progress bar with a
preview image each, in the form the latent previewer uses (("JPEG", PIL image, max size)), so the
frames ComfyUI builds and sends are the ones a sampler's steps produce. It passes its image on.
"""
import time

import comfy.utils
from PIL import Image


class WesPreviewSteps:
    @classmethod
    def INPUT_TYPES(cls):
        return {
            "required": {
                "image": ("IMAGE",),
                "steps": ("INT", {"default": 4, "min": 1, "max": 100}),
                "seconds": ("FLOAT", {"default": 1.0, "min": 0.0, "max": 60.0, "step": 0.01}),
            }
        }

    RETURN_TYPES = ("IMAGE",)
    FUNCTION = "run"
    CATEGORY = "testing"

    def run(self, image, steps, seconds):
        bar = comfy.utils.ProgressBar(steps)
        for step in range(1, steps + 1):
            time.sleep(seconds / steps)
            preview = Image.new("RGB", (96, 64), ((step * 40) % 256, 80, 160))
            bar.update_absolute(step, steps, ("JPEG", preview, 512))
        return (image,)


NODE_CLASS_MAPPINGS = {"WesPreviewSteps": WesPreviewSteps}
