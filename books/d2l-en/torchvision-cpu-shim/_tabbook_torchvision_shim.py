"""Let a CUDA-built torchvision import beside the CPU torch wheel.

The registry serves torchvision for torch 2.13 only as a CUDA build. Its C++ library cannot
load beside CPU torch (it links libc10_cuda.so), and torchvision then stops at import time on
an unguarded ``register_fake("torchvision::nms")`` for an operator that was never defined.
Defining the two schemas first lets the import finish: the Python parts (transforms, models,
datasets, box arithmetic) work, and the C++ operators raise when called.

The hook waits for the first ``import torchvision`` (a ``sys.meta_path`` finder that removes
itself), so processes that never touch torchvision do not pay for importing torch.
"""

import sys

_libraries = []  # keeps the op definitions alive for the life of the process


class _DefineTorchvisionOps:
    def find_spec(self, name, path=None, target=None):
        if name != "torchvision":
            return None
        sys.meta_path.remove(self)
        import torch

        if not hasattr(torch.ops.torchvision, "nms"):
            library = torch.library.Library("torchvision", "DEF")
            library.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            library.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            _libraries.append(library)
        return None  # the normal finders load torchvision itself


def install():
    if not any(isinstance(f, _DefineTorchvisionOps) for f in sys.meta_path):
        sys.meta_path.insert(0, _DefineTorchvisionOps())
