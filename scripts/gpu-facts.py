"""GPU facts for the GPUs chapter, fourth edition (issue 39).

scripts/gpu-build.sh runs this after the build, with the machine's interpreter, its output in
$OUT/facts.txt: what the chapter's prose says of GPU behaviour that no CPU run can show (the
exact errors, the JAX plugin without a visible GPU, the allocators' settings, FP8, CUDA graphs),
read off the machine so that the next edit can check each sentence. Closures defined in loops
are called inside the same iteration (ruff's B023 is ignored for this file, in ruff.toml). By hand, on the GPU machine (torch 2.11.0+cu130, jax 0.11.2 with the CUDA 13
plugin): ``python3 scripts/gpu-facts.py > facts.txt 2>&1``.

Imports only torch, jax, numpy and the standard library. Every fact is printed on lines that
start with [LABEL]; each runs in its own try/except, so one failure does not stop the rest.
Subprocesses (for environment variables read at start-up, and for hidden GPUs) run first,
before this process holds any GPU memory. Meant to finish well under 60 s.
"""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import traceback

T0 = time.time()
TMP = tempfile.mkdtemp(prefix='gpu_probe_')


def say(label, value):
    text = str(value)
    print(f'[{label}] {text}', flush=True)


def fact(label, fn):
    """Print fn()'s value under label; the exception's type and message if it raises."""
    try:
        say(label, fn())
    except BaseException as err:  # noqa: BLE001 - a probe reports everything
        msg = str(err).strip()
        say(label, f'EXCEPTION {type(err).__module__}.{type(err).__name__}: {msg[:3000]}')


def run(code, env_extra=None, timeout=60, drop=()):
    """Run python -c code in a fresh process; its rc, stdout and the tail of stderr."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(env_extra or {})
    start = time.time()
    try:
        r = subprocess.run([sys.executable, '-c', textwrap.dedent(code)], env=env,
                           capture_output=True, text=True, timeout=timeout)
        return (f'rc={r.returncode} ({time.time() - start:.1f} s)\n  stdout: '
                + r.stdout.strip().replace('\n', '\n          ')
                + '\n  stderr(tail): ' + r.stderr.strip()[-2500:].replace('\n', '\n          '))
    except subprocess.TimeoutExpired as err:
        return f'TIMEOUT after {timeout} s; stdout {err.stdout!r:.1500} stderr {err.stderr!r:.1500}'


background = {}


def in_background(label, code, env_extra=None, timeout=60, drop=()):
    def target():
        background[label] = run(code, env_extra, timeout, drop)
    t = threading.Thread(target=target)
    t.start()
    return t


threads = []
print('=' * 30, 'environment', flush=True)
fact('python', lambda: sys.version.split()[0])
fact('nvidia-smi', lambda: subprocess.run(
    ['nvidia-smi', '--format=csv', '--query-gpu=index,name,memory.total,memory.used,driver_version,compute_cap'],
    capture_output=True, text=True).stdout.strip())
try:
    from importlib import metadata
    pkgs = {}
    for name in ['torch', 'jax', 'jaxlib', 'jax-cuda13-plugin', 'jax-cuda13-pjrt',
                 'jax-cuda12-plugin', 'jax-cuda12-pjrt', 'flax', 'optax', 'numpy', 'triton',
                 'nvidia-nccl-cu13', 'nvidia-cublas', 'nvidia-cublas-cu13']:
        try:
            pkgs[name] = metadata.version(name)
        except Exception:
            pass
    say('packages', pkgs)
except Exception as err:
    say('packages', f'EXCEPTION {err}')
for var in ['CUDA_VISIBLE_DEVICES', 'XLA_PYTHON_CLIENT_PREALLOCATE', 'XLA_PYTHON_CLIENT_MEM_FRACTION',
            'XLA_CLIENT_MEM_FRACTION', 'XLA_FLAGS', 'JAX_PLATFORMS', 'PYTORCH_ALLOC_CONF',
            'PYTORCH_CUDA_ALLOC_CONF', 'NVIDIA_TF32_OVERRIDE']:
    say(f'env {var}', os.environ.get(var, '(unset)'))

# ---------------------------------------------------------------- hidden GPU (no GPU memory used)
JAX_DEVICES = '''
import jax
print('devices:', jax.devices())
print('default_backend:', jax.default_backend())
try:
    print('devices(gpu):', jax.devices('gpu'))
except Exception as e:
    print('devices(gpu) raised', type(e).__module__ + '.' + type(e).__name__, ':', str(e)[:600])
try:
    print('devices(cuda):', jax.devices('cuda'))
except Exception as e:
    print('devices(cuda) raised', type(e).__module__ + '.' + type(e).__name__, ':', str(e)[:600])
'''
threads.append(in_background('jax CUDA_VISIBLE_DEVICES=""', JAX_DEVICES, {'CUDA_VISIBLE_DEVICES': ''}))
threads.append(in_background('jax CUDA_VISIBLE_DEVICES="" JAX_PLATFORMS=cuda', JAX_DEVICES,
                             {'CUDA_VISIBLE_DEVICES': '', 'JAX_PLATFORMS': 'cuda'}))
threads.append(in_background('jax CUDA_VISIBLE_DEVICES=0 (one visible)',
                             JAX_DEVICES.replace('import jax', 'import os; os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"]="false"\nimport jax'),
                             {'CUDA_VISIBLE_DEVICES': '0'}))
threads.append(in_background('torch CUDA_VISIBLE_DEVICES=""', '''
import torch
print('is_available', torch.cuda.is_available(), 'count', torch.cuda.device_count(),
      'version.cuda', torch.version.cuda, 'accelerator', torch.accelerator.current_accelerator())
''', {'CUDA_VISIBLE_DEVICES': ''}))

# ---------------------------------------------------------------- JAX memory env vars (sequential)
print('=' * 30, 'JAX memory: environment variables read at start (fresh processes)', flush=True)
JAX_MEM = '''
import subprocess, jax, jax.numpy as jnp
d = jax.devices()[0]
x = jnp.ones(1000, device=d).block_until_ready()
s = d.memory_stats() or {}
keep = {k: s[k] for k in ('bytes_limit', 'bytes_reservable_limit', 'pool_bytes', 'peak_pool_bytes',
                          'bytes_in_use', 'bytes_reserved', 'largest_free_block_bytes') if k in s}
print('stats', keep)
print('all stat keys', sorted(s))
smi = subprocess.run(['nvidia-smi', '--format=csv,noheader,nounits', '--query-gpu=memory.total,memory.used'],
                     capture_output=True, text=True).stdout.strip()
total, used = (float(v) for v in smi.split(','))
print(f'nvidia-smi MiB total {total:.0f} used {used:.0f}; bytes_limit/total {keep.get("bytes_limit", 0) / (total * 2**20):.3f}')
'''
MEM_DROP = ('XLA_PYTHON_CLIENT_PREALLOCATE', 'XLA_PYTHON_CLIENT_MEM_FRACTION',
            'XLA_CLIENT_MEM_FRACTION', 'XLA_CLIENT_PREALLOCATE')
# The default case alone (it reserves the default share); then the others at once, with
# fractions small enough that they fit beside each other (.3 + .2 + .3 < 1).
say('jax mem default', run(JAX_MEM, {}, timeout=40, drop=MEM_DROP))
for label, extra in [
        ('XLA_PYTHON_CLIENT_MEM_FRACTION=.3', {'XLA_PYTHON_CLIENT_MEM_FRACTION': '.3'}),
        ('XLA_CLIENT_MEM_FRACTION=.2', {'XLA_CLIENT_MEM_FRACTION': '.2'}),
        ('both: XLA_CLIENT_MEM_FRACTION=.2 XLA_PYTHON_CLIENT_MEM_FRACTION=.3',
         {'XLA_CLIENT_MEM_FRACTION': '.2', 'XLA_PYTHON_CLIENT_MEM_FRACTION': '.3'}),
        ('XLA_PYTHON_CLIENT_PREALLOCATE=false', {'XLA_PYTHON_CLIENT_PREALLOCATE': 'false'}),
        ('XLA_CLIENT_PREALLOCATE=false', {'XLA_CLIENT_PREALLOCATE': 'false'}),
        ('XLA_PYTHON_CLIENT_ALLOCATOR=platform', {'XLA_PYTHON_CLIENT_ALLOCATOR': 'platform'})]:
    threads.append(in_background(f'jax mem {label}', JAX_MEM, extra, timeout=40, drop=MEM_DROP))

# ---------------------------------------------------------------- NCCL / process groups (background)
NCCL = '''
import os, sys, datetime, warnings
import torch, torch.distributed as dist
import torch.multiprocessing as mp
MODE = sys.argv[1] if len(sys.argv) > 1 else ''
def work(rank, world, mode):
    os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT=os.environ['PORT'], RANK=str(rank), WORLD_SIZE=str(world))
    warnings.simplefilter('always')
    with warnings.catch_warnings(record=True) as caught:
        try:
            kw = {}
            if mode == 'device_id':
                kw['device_id'] = torch.device('cuda', 0)
            dist.init_process_group('nccl', timeout=datetime.timedelta(seconds=20), **kw)
            t = torch.ones(4, device='cuda:0') * (rank + 1)
            dist.all_reduce(t)
            dist.barrier()
            torch.cuda.synchronize()
            print(f'rank {rank}/{world} mode={mode!r} all_reduce -> {t.tolist()}', flush=True)
            dist.destroy_process_group()
        except Exception as e:
            print(f'rank {rank}/{world} mode={mode!r} raised {type(e).__name__}: {str(e)[:700]}', flush=True)
    for w in caught:
        print(f'rank {rank} warning: {str(w.message)[:400]}', flush=True)
if __name__ == '__main__':
    world, mode = int(os.environ['WORLD']), os.environ['MODE']
    mp.spawn(work, args=(world, mode), nprocs=world, join=True)
'''
nccl_path = os.path.join(TMP, 'nccl_probe.py')
with open(nccl_path, 'w') as f:
    f.write(NCCL)


def nccl(label, world, mode, port):
    def target():
        env = {**os.environ, 'WORLD': str(world), 'MODE': mode, 'PORT': str(port)}
        start = time.time()
        try:
            r = subprocess.run([sys.executable, nccl_path], env=env, capture_output=True, text=True, timeout=45)
            background[label] = (f'rc={r.returncode} ({time.time() - start:.1f} s)\n  stdout: '
                                 + r.stdout.strip().replace('\n', '\n          ')
                                 + '\n  stderr(tail): ' + r.stderr.strip()[-1500:].replace('\n', '\n          '))
        except subprocess.TimeoutExpired:
            background[label] = 'TIMEOUT after 45 s (hung)'
    t = threading.Thread(target=target)
    t.start()
    return t


threads.append(nccl('nccl one process, no device_id, barrier', 1, '', 29511))
threads.append(nccl('nccl one process, device_id=cuda:0', 1, 'device_id', 29512))
threads.append(nccl('nccl TWO processes on the ONE GPU', 2, '', 29513))

# ---------------------------------------------------------------- PyTorch, in this process
print('=' * 30, 'PyTorch', flush=True)
try:
    import torch
    from torch import nn
    cuda = torch.device('cuda', 0)
    fact('torch version', lambda: (torch.__version__, torch.version.cuda, torch.backends.cudnn.version()))
    fact('torch device', lambda: (torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0),
                                  f'{torch.cuda.get_device_properties(0).total_memory / 2**30:.2f} GiB',
                                  torch.cuda.get_device_properties(0).multi_processor_count))
    fact('torch accelerator', lambda: torch.accelerator.current_accelerator())

    def first_line(fn):
        try:
            r = fn()
            return f'no error; result {r!r:.200}'
        except Exception as e:
            return f'{type(e).__name__}: {str(e).strip()}'

    # devices.md
    a = torch.ones(2, 3)
    b = torch.ones(2, 3, device=cuda)
    fact('torch cpu + cuda', lambda: first_line(lambda: a + b))
    fact('torch cpu @ cuda.T', lambda: first_line(lambda: a @ b.T))
    fact('torch 0-dim cpu tensor * cuda', lambda: first_line(lambda: (torch.tensor(2.0) * b).device))
    fact('torch 1-element (1-dim) cpu tensor * cuda', lambda: first_line(lambda: (torch.tensor([2.0]) * b).device))
    fact('torch cuda.numpy()', lambda: first_line(lambda: b.numpy()))
    fact('torch cuda tensor .to(cuda) is same object', lambda: b.to(cuda) is b)
    # finding 14: CPU index tensors into CUDA tensors
    x = torch.arange(12.0, device=cuda).reshape(3, 4)
    i_cpu = torch.tensor([0, 2])
    m_cpu = torch.tensor([True, False, True])
    fact('torch cuda[cpu long index]', lambda: first_line(lambda: (x[i_cpu].device, x[i_cpu].tolist())))
    fact('torch cuda[cpu bool mask]', lambda: first_line(lambda: (x[m_cpu].device, x[m_cpu].shape)))
    fact('torch cuda[:, cpu long index]', lambda: first_line(lambda: x[:, i_cpu].device))

    def index_put():
        y = x.clone()
        y[i_cpu] = 0.0
        return y.device
    fact('torch cuda[cpu index] = value (index_put_)', lambda: first_line(index_put))
    fact('torch index_select(cuda, 0, cpu index)', lambda: first_line(lambda: torch.index_select(x, 0, i_cpu).device))
    fact('torch gather(cuda, 0, cpu index)', lambda: first_line(lambda: torch.gather(x, 0, torch.zeros(1, 4, dtype=torch.long)).device))
    fact('torch cuda.index_add_(0, cpu index, cuda src)', lambda: first_line(lambda: x.clone().index_add_(0, i_cpu, torch.ones(2, 4, device=cuda)).device))
    fact('torch cuda[cuda index] into cpu tensor', lambda: first_line(lambda: torch.arange(3.0)[torch.tensor([0, 1], device=cuda)].device))
    fact('torch embedding(cpu ids, cuda weight)', lambda: first_line(lambda: nn.functional.embedding(torch.tensor([0, 1]), torch.ones(5, 3, device=cuda)).device))
    fact('torch where(cpu cond, cuda, cuda)', lambda: first_line(lambda: torch.where(torch.tensor([True, False, True, False]), x[0], x[1]).device))

    # training.md
    other = cuda
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).to(other)
    fact('torch net(cuda) with cpu input', lambda: first_line(lambda: net(torch.randn(2, 4))))

    class Standardize(nn.Module):
        def __init__(self, mean, std):
            super().__init__()
            self.mean = mean
            self.register_buffer('std', std)

        def forward(self, X):
            return (X - self.mean) / self.std
    layer = Standardize(torch.zeros(4), torch.ones(4)).to(other)
    fact('torch Standardize (plain cpu attribute)', lambda: first_line(lambda: layer(torch.ones(2, 4, device=other))))

    class AddNoise(nn.Module):
        def forward(self, X):
            return X + 0.1 * torch.randn(X.shape)
    fact('torch AddNoise (cpu randn)', lambda: first_line(lambda: AddNoise()(torch.ones(2, 3, device=other))))

    # finding 1: Adam with CPU state for CUDA params; default, foreach=False, fused=True
    def adam_case(**kw):
        lin = nn.Linear(4, 1)
        opt = torch.optim.Adam(lin.parameters(), lr=0.01, **kw)
        lin(torch.randn(8, 4)).sum().backward()
        opt.step()
        lin.to(other)
        same = all(p is q for p, q in zip(opt.param_groups[0]['params'], lin.parameters(), strict=True))
        state_dev = sorted({str(t.device) for s in opt.state.values() for t in s.values()})
        lin(torch.randn(8, 4, device=other)).sum().backward()
        return f'same Parameter objects {same}; state on {state_dev}; step(): ' + first_line(opt.step)
    fact('torch Adam default (foreach) after .to(cuda)', lambda: adam_case())
    fact('torch Adam foreach=False after .to(cuda)', lambda: adam_case(foreach=False))
    fact('torch Adam fused=True after .to(cuda)', lambda: adam_case(fused=True))

    def sgd_case():
        lin = nn.Linear(4, 1)
        opt = torch.optim.SGD(lin.parameters(), lr=0.01, momentum=0.9)
        lin(torch.randn(8, 4)).sum().backward()
        opt.step()
        lin.to(other)
        lin(torch.randn(8, 4, device=other)).sum().backward()
        return first_line(opt.step)
    fact('torch SGD momentum after .to(cuda)', sgd_case)
    fact('torch optimizer default impl for cuda params', lambda: __import__('torch.optim.optimizer', fromlist=['x'])._default_to_fused_or_foreach(
        [torch.zeros(2, device=cuda)], differentiable=False, use_fused=False))

    # memory.md: OOM message
    fact('torch OOM message', lambda: first_line(lambda: torch.empty((2 ** 16,) * 3, device=cuda)))

    def oom_type():
        try:
            torch.empty((2 ** 16,) * 3, device=cuda)
        except Exception as e:
            return [c.__module__ + '.' + c.__name__ for c in type(e).__mro__]
    fact('torch OOM exception mro', oom_type)
    torch.cuda.empty_cache()

    # torch.load on a machine without the device (cuda tensor saved here, loaded with GPU hidden)
    path = os.path.join(TMP, 'cuda_tensor.pt')
    torch.save({'w': torch.ones(3, device=cuda)}, path)
    threads.append(in_background('torch.load of a cuda tensor with CUDA_VISIBLE_DEVICES=""', f'''
import torch
try:
    torch.load({path!r})
    print('loaded without error')
except Exception as e:
    print(type(e).__name__ + ':', str(e))
print('with map_location=cpu:', torch.load({path!r}, map_location='cpu')['w'].device)
''', {'CUDA_VISIBLE_DEVICES': ''}))

    # TF32 defaults
    fact('torch float32_matmul_precision default', lambda: torch.get_float32_matmul_precision())
    fact('torch backends.cuda.matmul.allow_tf32 default', lambda: torch.backends.cuda.matmul.allow_tf32)
    fact('torch backends.cudnn.allow_tf32 default', lambda: torch.backends.cudnn.allow_tf32)
    fact('torch backends.fp32_precision default', lambda: torch.backends.fp32_precision)
    fact('torch backends.cuda.matmul.fp32_precision default', lambda: torch.backends.cuda.matmul.fp32_precision)
    fact('torch backends.cudnn.fp32_precision default', lambda: torch.backends.cudnn.fp32_precision)
    fact('torch backends.cudnn.conv.fp32_precision default', lambda: torch.backends.cudnn.conv.fp32_precision)

    # async: call returned vs finished
    def async_timing():
        xx = torch.randn(8192, 8192, device=cuda)
        xx @ xx
        torch.cuda.synchronize()
        s = time.perf_counter()
        xx @ xx
        r = time.perf_counter() - s
        torch.cuda.synchronize()
        f = time.perf_counter() - s
        return f'8192x8192 FP32 matmul: returned {r * 1e3:.3f} ms, finished {f * 1e3:.3f} ms'
    fact('torch async', async_timing)

    def bench(fn, repeat=20, warmup=3):
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        s = time.perf_counter()
        for _ in range(repeat):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - s) / repeat

    # FP8
    fact('torch float8 types', lambda: {
        str(t): dict(max=float(torch.finfo(t).max), eps=float(torch.finfo(t).eps),
                     tiny=float(torch.finfo(t).tiny), bits=torch.finfo(t).bits)
        for t in (torch.float8_e4m3fn, torch.float8_e5m2, torch.bfloat16, torch.float16)})
    fact('torch fp8 @ fp8 plain matmul', lambda: first_line(
        lambda: (torch.ones(16, 16, device=cuda).to(torch.float8_e4m3fn)
                 @ torch.ones(16, 16, device=cuda).to(torch.float8_e4m3fn)).dtype))

    def fp8_bench(n=8192):
        torch.manual_seed(0)
        A = torch.randn(n, n, device=cuda)
        W = torch.randn(n, n, device=cuda)
        out = {}
        torch.backends.cuda.matmul.allow_tf32 = False
        out['fp32 (no TF32)'] = bench(lambda: A @ W.T, repeat=5)
        torch.backends.cuda.matmul.allow_tf32 = True
        out['tf32'] = bench(lambda: A @ W.T, repeat=10)
        torch.backends.cuda.matmul.allow_tf32 = False
        Ab, Wb = A.bfloat16(), W.bfloat16()
        out['bf16'] = bench(lambda: Ab @ Wb.T)
        fmax = torch.finfo(torch.float8_e4m3fn).max
        sa = (A.abs().max() / fmax).float()
        sw = (W.abs().max() / fmax).float()
        A8 = (A / sa).to(torch.float8_e4m3fn)
        W8 = (W / sw).to(torch.float8_e4m3fn)
        out['fp8 e4m3 tensorwise _scaled_mm'] = bench(
            lambda: torch._scaled_mm(A8, W8.T, scale_a=sa, scale_b=sw, out_dtype=torch.bfloat16))
        C8 = torch._scaled_mm(A8, W8.T, scale_a=sa, scale_b=sw, out_dtype=torch.bfloat16).float()
        ref = A.double() @ W.double().T
        Cb = (Ab @ Wb.T).double()
        def rel(C):
            return float((C.double() - ref).norm() / ref.norm())
        res = {k: f'{v * 1e3:.3f} ms = {2 * n ** 3 / v / 1e12:.0f} TFLOP/s' for k, v in out.items()}
        res['relative error fp8 vs fp64'] = f'{rel(C8):.2e}'
        res['relative error bf16 vs fp64'] = f'{rel(Cb):.2e}'
        # row-wise scales
        try:
            sa_r = (A.abs().amax(dim=1, keepdim=True) / fmax).float()
            sw_r = (W.abs().amax(dim=1, keepdim=True) / fmax).float()
            A8r = (A / sa_r).to(torch.float8_e4m3fn)
            W8r = (W / sw_r).to(torch.float8_e4m3fn)
            t = bench(lambda: torch._scaled_mm(A8r, W8r.T, scale_a=sa_r, scale_b=sw_r.T, out_dtype=torch.bfloat16))
            Cr = torch._scaled_mm(A8r, W8r.T, scale_a=sa_r, scale_b=sw_r.T, out_dtype=torch.bfloat16)
            res['fp8 rowwise _scaled_mm'] = f'{t * 1e3:.3f} ms = {2 * n ** 3 / t / 1e12:.0f} TFLOP/s, rel err {rel(Cr):.2e}'
        except Exception as e:
            res['fp8 rowwise _scaled_mm'] = f'{type(e).__name__}: {str(e)[:500]}'
        # second operand row-major (not transposed): the layout error
        try:
            torch._scaled_mm(A8, W8, scale_a=sa, scale_b=sw, out_dtype=torch.bfloat16)
            res['_scaled_mm with row-major second operand'] = 'no error'
        except Exception as e:
            res['_scaled_mm with row-major second operand'] = f'{type(e).__name__}: {str(e)[:500]}'
        # float32 output
        try:
            torch._scaled_mm(A8, W8.T, scale_a=sa, scale_b=sw, out_dtype=torch.float32)
            res['_scaled_mm out_dtype float32'] = 'no error'
        except Exception as e:
            res['_scaled_mm out_dtype float32'] = f'{type(e).__name__}: {str(e)[:300]}'
        # e5m2 x e5m2
        try:
            torch._scaled_mm(A8.to(torch.float8_e5m2), W8.to(torch.float8_e5m2).T, scale_a=sa, scale_b=sw,
                             out_dtype=torch.bfloat16)
            res['_scaled_mm e5m2 x e5m2'] = 'no error'
        except Exception as e:
            res['_scaled_mm e5m2 x e5m2'] = f'{type(e).__name__}: {str(e)[:300]}'
        try:
            torch._scaled_mm(A8, W8.to(torch.float8_e5m2).T, scale_a=sa, scale_b=sw, out_dtype=torch.bfloat16)
            res['_scaled_mm e4m3 x e5m2'] = 'no error'
        except Exception as e:
            res['_scaled_mm e4m3 x e5m2'] = f'{type(e).__name__}: {str(e)[:300]}'
        return json.dumps(res, indent=1)
    fact('torch FP8 vs BF16 vs FP32 8192x8192 (H200)', fp8_bench)

    def fp8_sizes():
        res = {}
        for n in (1024, 2048, 4096):
            A = torch.randn(n, n, device=cuda)
            Ab = A.bfloat16()
            A8 = A.to(torch.float8_e4m3fn)
            one = torch.tensor(1.0, device=cuda)
            tb = bench(lambda: Ab @ Ab.T)
            t8 = bench(lambda: torch._scaled_mm(A8, A8.T, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
            res[n] = f'bf16 {2 * n ** 3 / tb / 1e12:.0f} TFLOP/s, fp8 {2 * n ** 3 / t8 / 1e12:.0f} TFLOP/s'
        return res
    fact('torch FP8 vs BF16 smaller sizes', fp8_sizes)
    torch.cuda.empty_cache()

    # CUDA graphs
    def chain(v):
        for _ in range(16):
            v = torch.abs(v - 0.1) * 0.9
        return v

    def graph_case(size):
        v = torch.randn(size, device=cuda)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                chain(v)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        t0 = time.perf_counter()
        with torch.cuda.graph(g):
            out = chain(v)
        capture = time.perf_counter() - t0
        t_eager = bench(lambda: chain(v), repeat=50)
        t_graph = bench(g.replay, repeat=50)
        ok = torch.equal(out, chain(v))
        g.replay()
        return (f'size {size}: eager {t_eager * 1e6:.1f} us/call, graph replay {t_graph * 1e6:.1f} us/call, '
                f'capture {capture * 1e3:.1f} ms, same result {ok}')
    fact('torch CUDA graph chain 48 ops small', lambda: graph_case(1024))
    fact('torch CUDA graph chain 48 ops 2**20', lambda: graph_case(2 ** 20))
    fact('torch CUDA graph chain 48 ops 2**24', lambda: graph_case(2 ** 24))

    def graph_train_step(capturable):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                              nn.Linear(256, 1)).to(cuda)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=capturable)
        X = torch.randn(256, 64, device=cuda)
        y = torch.randn(256, 1, device=cuda)

        def step():
            opt.zero_grad(set_to_none=False)
            loss = nn.functional.mse_loss(model(X), y)
            loss.backward()
            opt.step()
            return loss
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(s)
        t_eager = bench(step, repeat=50)
        g = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(g):
                static_loss = step()
        except Exception as e:
            return f'capture raised {type(e).__name__}: {str(e)[:600]}'
        t_graph = bench(g.replay, repeat=50)
        return f'capturable={capturable}: eager step {t_eager * 1e6:.1f} us, graph replay {t_graph * 1e6:.1f} us, loss {float(static_loss):.4f}'
    fact('torch CUDA graph whole train step (Adam capturable=True)', lambda: graph_train_step(True))
    # A capture that fails may leave this process's stream unusable: in a process of its own.
    threads.append(in_background('torch CUDA graph capture of Adam with capturable=False', '''
import torch
from torch import nn
cuda = torch.device('cuda', 0)
model = nn.Linear(64, 1).to(cuda)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X = torch.randn(256, 64, device=cuda)
def step():
    opt.zero_grad(set_to_none=False)
    model(X).square().mean().backward()
    opt.step()
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        step()
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
try:
    with torch.cuda.graph(g):
        step()
    print('captured without error')
except Exception as e:
    print(type(e).__name__ + ':', str(e)[:800])
'''))
    fact('torch make_graphed_callables exists', lambda: hasattr(torch.cuda, 'make_graphed_callables'))

    # sync every step vs at the end: the logging loop of training.md on the GPU
    def sync_loop(sync, num_steps=200):
        net = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1)).to(cuda)
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        X = torch.randn(256, 64, device=cuda)
        y = torch.randn(256, 1, device=cuda)
        total = 0.0 if sync else torch.zeros((), device=cuda)
        torch.cuda.synchronize()
        s = time.perf_counter()
        for _ in range(num_steps):
            loss = nn.functional.mse_loss(net(X), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() if sync else loss.detach()
        float(total)
        return (time.perf_counter() - s) / num_steps
    fact('torch logging loop per step: sync each step / at end', lambda: (
        sync_loop(True, 20), sync_loop(False, 20),
        f'{sync_loop(True) * 1e6:.1f} us vs {sync_loop(False) * 1e6:.1f} us')[-1])

    # host/device copy bandwidth pageable vs pinned
    def copy_bw():
        res = {}
        for mb in (1, 256):
            h = torch.empty(mb * 2 ** 20 // 4)
            hp = h.pin_memory()
            for name, src in (('pageable', h), ('pinned', hp)):
                t = bench(lambda: src.to(cuda, non_blocking=True), repeat=10)
                res[f'{mb} MiB {name}'] = f'{mb * 2 ** 20 / t / 1e9:.1f} GB/s'
        return res
    fact('torch host->device copy bandwidth', copy_bw)
    torch.cuda.empty_cache()
    fact('torch memory after probe (allocated, reserved MiB)', lambda: (
        torch.cuda.memory_allocated() / 2 ** 20, torch.cuda.memory_reserved() / 2 ** 20))
except Exception:
    say('torch section', 'EXCEPTION\n' + traceback.format_exc())

# ---------------------------------------------------------------- JAX, in this process
print('=' * 30, f'JAX (t={time.time() - T0:.1f} s)', flush=True)
try:
    os.environ['XLA_PYTHON_CLIENT_PREALLOCATE'] = 'false'
    import jax
    import numpy as np
    from jax import numpy as jnp
    jax.config.update('jax_num_cpu_devices', 4)
    fact('jax versions', lambda: (jax.__version__, __import__('jaxlib').__version__))
    fact('jax devices', lambda: (jax.devices(), jax.default_backend(), [d.device_kind for d in jax.devices()]))
    fact('jax cpu devices beside the GPU (jax_num_cpu_devices=4)', lambda: jax.devices('cpu'))
    gpu = jax.devices('gpu')[0]
    cpu = jax.devices('cpu')[0]
    fact('jax default matmul precision config', lambda: jax.config.jax_default_matmul_precision)

    def first_line_j(fn):
        try:
            r = fn()
            return f'no error; result {r!r:.200}'
        except Exception as e:
            return f'{type(e).__module__}.{type(e).__name__}: {str(e).strip()}'
    a = jax.device_put(jnp.ones((2, 3)), cpu)
    b = jax.device_put(jnp.ones((2, 3)), gpu)
    fact('jax committed cpu + committed gpu', lambda: first_line_j(lambda: a + b))
    fact('jax uncommitted + committed gpu', lambda: (jnp.ones((2, 3)) + b).device)
    fact('jax numpy array + committed gpu', lambda: (np.ones((2, 3), np.float32) + b).device)

    # optax-like state on the CPU, params on the GPU (the training.md pitfall, without optax)
    @jax.jit
    def update(params, opt_state, grads):
        mu = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, opt_state['mu'], grads)
        return jax.tree_util.tree_map(lambda p, m: p - 0.01 * m, params, mu), {'mu': mu}
    p_cpu = jax.device_put({'w': jnp.zeros(4), 'b': jnp.zeros(())}, cpu)
    state = {'mu': jax.tree_util.tree_map(jnp.zeros_like, p_cpu)}
    state = jax.device_put(state, cpu)
    p_gpu = jax.device_put(p_cpu, gpu)
    fact('jax jit(params on gpu, state on cpu)', lambda: first_line_j(
        lambda: update(p_gpu, state, jax.tree_util.tree_map(jnp.ones_like, p_gpu))))

    # OOM
    fact('jax OOM', lambda: first_line_j(lambda: jnp.empty((2 ** 16,) * 3, device=gpu)))
    fact('jax OOM realistic (200 GB)', lambda: first_line_j(lambda: jnp.ones((50 * 2 ** 30,), jnp.float32, device=gpu).block_until_ready())[:1500])
    fact('jax memory_stats with preallocate=false', lambda: {k: v for k, v in (gpu.memory_stats() or {}).items()
                                                             if k in ('bytes_limit', 'bytes_in_use', 'peak_bytes_in_use', 'pool_bytes')})

    # TF32 default on GPU: error of an FP32 product
    def precision_default():
        key = jax.random.key(0)
        A = jax.device_put(jax.random.normal(key, (2048, 2048)), gpu)
        ref = np.asarray(A, np.float64) @ np.asarray(A, np.float64)
        res = {}
        for prec in (None, 'highest', 'high', 'default', 'tensorfloat32'):
            try:
                C = np.asarray(jnp.matmul(A, A, precision=prec), np.float64)
                res[str(prec)] = f'{np.linalg.norm(C - ref) / np.linalg.norm(ref):.2e}'
            except Exception as e:
                res[str(prec)] = f'{type(e).__name__}: {str(e)[:200]}'
        return res
    fact('jax FP32 matmul relative error by precision (None = default)', precision_default)

    def jbench(fn, repeat=20, warmup=3):
        jax.block_until_ready([fn() for _ in range(warmup)])
        s = time.perf_counter()
        jax.block_until_ready([fn() for _ in range(repeat)])
        return (time.perf_counter() - s) / repeat

    def jax_async():
        A = jax.device_put(jax.random.normal(jax.random.key(1), (8192, 8192)), gpu)
        (A @ A).block_until_ready()
        s = time.perf_counter()
        C = A @ A
        r = time.perf_counter() - s
        C.block_until_ready()
        return f'returned {r * 1e3:.3f} ms, finished {(time.perf_counter() - s) * 1e3:.3f} ms'
    fact('jax async 8192 matmul', jax_async)

    # FP8 in JAX
    fact('jax float8 finfo', lambda: {n: (float(jnp.finfo(getattr(jnp, n)).max), float(jnp.finfo(getattr(jnp, n)).eps))
                                      for n in ('float8_e4m3fn', 'float8_e5m2')})

    def jax_fp8(n=8192):
        A = jax.random.normal(jax.random.key(2), (n, n), jnp.float32)
        W = jax.random.normal(jax.random.key(3), (n, n), jnp.float32)
        A, W = jax.device_put(A, gpu), jax.device_put(W, gpu)
        fmax = float(jnp.finfo(jnp.float8_e4m3fn).max)

        @jax.jit
        def mm_fp8(A8, W8, sa, sw):
            out = jax.lax.dot_general(A8, W8, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32)
            return (out * (sa * sw)).astype(jnp.bfloat16)

        @jax.jit
        def mm_bf16(Ab, Wb):
            return jax.lax.dot_general(Ab, Wb, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32).astype(jnp.bfloat16)
        sa = jnp.max(jnp.abs(A)) / fmax
        sw = jnp.max(jnp.abs(W)) / fmax
        A8 = (A / sa).astype(jnp.float8_e4m3fn)
        W8 = (W / sw).astype(jnp.float8_e4m3fn)
        Ab, Wb = A.astype(jnp.bfloat16), W.astype(jnp.bfloat16)
        text = mm_fp8.lower(A8, W8, sa, sw).compile().as_text()
        targets = sorted(set(t.split('"')[1] for t in text.split('custom_call_target=')[1:]))
        t8 = jbench(lambda: mm_fp8(A8, W8, sa, sw))
        tb = jbench(lambda: mm_bf16(Ab, Wb))
        ref = jnp.matmul(A, W.T, precision='highest')  # on the GPU: numpy in FP64 would take seconds
        def rel(C):
            return float(jnp.linalg.norm(C.astype(jnp.float32) - ref) / jnp.linalg.norm(ref))
        return (f'custom calls {targets}; f8 in HLO: {"f8e4m3fn" in text}; fp8 {2 * n ** 3 / t8 / 1e12:.0f} TFLOP/s, '
                f'bf16 {2 * n ** 3 / tb / 1e12:.0f} TFLOP/s; rel err fp8 {rel(mm_fp8(A8, W8, sa, sw)):.2e}, '
                f'bf16 {rel(mm_bf16(Ab, Wb)):.2e}')
    fact('jax FP8 dot (8192) on the GPU', jax_fp8)
    fact('jax FP8 dot on CPU device', lambda: first_line_j(lambda: jax.jit(
        lambda a: jax.lax.dot(a, a, preferred_element_type=jnp.float32))(
        jax.device_put(jnp.ones((64, 64), jnp.float8_e4m3fn), cpu)).sum()))

    # the multi-device stand-in: a mesh of logical CPU devices on a GPU machine
    def cpu_mesh():
        from jax.sharding import Mesh, NamedSharding
        from jax.sharding import PartitionSpec as P
        devs = jax.devices('cpu')
        mesh = Mesh(np.array(devs), ('data',))
        Xs = jax.device_put(np.ones((256, 16), np.float32), NamedSharding(mesh, P('data')))
        w = jax.device_put(np.zeros((16, 1), np.float32), NamedSharding(mesh, P()))

        @jax.jit
        def step(w, X):
            g = jax.grad(lambda w: jnp.mean((X @ w - 1.0) ** 2))(w)
            return w - 0.1 * g
        text = step.lower(w, Xs).compile().as_text()
        out = step(w, Xs)
        return f'{len(devs)} cpu devices; all-reduce in compiled text {"all-reduce" in text}; out on {len(out.devices())} devices, platform {list(out.devices())[0].platform}'
    fact('jax CPU mesh beside the GPU', cpu_mesh)

    def shard_map_probe():
        from jax.sharding import Mesh
        from jax.sharding import PartitionSpec as P
        sm = getattr(jax, 'shard_map', None)
        where = 'jax.shard_map'
        if sm is None:
            from jax.experimental.shard_map import shard_map as sm
            where = 'jax.experimental.shard_map.shard_map'
        res = [where]
        for devs in (jax.devices('cpu'), jax.devices('gpu')):
            mesh = Mesh(np.array(devs), ('i',))
            f = jax.jit(sm(lambda x: jax.lax.psum(x.sum(keepdims=True), 'i'), mesh=mesh, in_specs=P('i'), out_specs=P('i')))
            x = jnp.arange(8.0 * len(devs))
            y = f(x)
            res.append(f'{devs[0].platform} x{len(devs)}: {np.asarray(y).tolist()} all-reduce in HLO {"all-reduce" in f.lower(x).compile().as_text()}')
        return res
    fact('jax shard_map', shard_map_probe)
    fact('jax.experimental.shard_map still importable', lambda: __import__('jax.experimental.shard_map', fromlist=['x']).shard_map)

    # logging loop on the GPU (training.md)
    def jax_sync_loop():
        key = jax.random.key(0)
        X = jax.device_put(jax.random.normal(key, (256, 64)), gpu)
        y = jax.device_put(jax.random.normal(key, (256, 1)), gpu)
        params = jax.device_put({'w1': jnp.ones((64, 64)) * 0.01, 'w2': jnp.ones((64, 1)) * 0.01}, gpu)

        @jax.jit
        def step(p):
            def loss_fn(p):
                return jnp.mean((jax.nn.relu(X @ p['w1']) @ p['w2'] - y) ** 2)
            loss, g = jax.value_and_grad(loss_fn)(p)
            return jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g), loss
        step(params)[1].block_until_ready()
        out = []
        for sync in (True, False, True, False):
            p, total = params, 0.0
            s = time.perf_counter()
            for _ in range(200):
                p, loss = step(p)
                total += float(loss) if sync else loss
            float(total)
            out.append(f'sync={sync}: {(time.perf_counter() - s) / 200 * 1e6:.1f} us/step')
        return out
    fact('jax logging loop on GPU', jax_sync_loop)
except Exception:
    say('jax section', 'EXCEPTION\n' + traceback.format_exc())

# ---------------------------------------------------------------- XLA command buffers (CUDA graphs)
print('=' * 30, f'XLA command buffers (t={time.time() - T0:.1f} s)', flush=True)
CMD = '''
import os, time
os.environ['XLA_PYTHON_CLIENT_PREALLOCATE'] = 'false'
import jax, jax.numpy as jnp
x = jnp.ones((256, 256))
@jax.jit
def many(x):
    for _ in range(32):
        x = jnp.tanh(x @ x * 0.01)
    return x
many(x).block_until_ready()
s = time.perf_counter()
for _ in range(200):
    y = many(x)
y.block_until_ready()
print(f'32 small matmul+tanh in one jit: {(time.perf_counter() - s) / 200 * 1e6:.1f} us per call')
txt = many.lower(x).compile().as_text()
print('command_buffer in HLO:', 'command_buffer' in txt)
'''
if time.time() - T0 < 45:
    say('xla default flags', run(CMD, timeout=30))
    say('xla --xla_gpu_enable_command_buffer= (off)', run(CMD, {'XLA_FLAGS': '--xla_gpu_enable_command_buffer='}, timeout=30))
else:
    say('xla command buffers', 'skipped: over time budget')

# ---------------------------------------------------------------- torch.compile on the GPU (if time)
print('=' * 30, f'torch.compile (t={time.time() - T0:.1f} s)', flush=True)
if time.time() - T0 < 50:
    try:
        def compile_case():
            v = torch.randn(2 ** 20, device=cuda)

            def chain2(v):
                for _ in range(16):
                    v = torch.abs(v - 0.1) * 0.9
                return v
            f = torch.compile(chain2)
            s = time.perf_counter()
            f(v)
            torch.cuda.synchronize()
            first = time.perf_counter() - s
            t_c = bench(lambda: f(v), repeat=50)
            t_e = bench(lambda: chain2(v), repeat=50)
            return f'first call {first:.2f} s; later {t_c * 1e6:.1f} us vs eager {t_e * 1e6:.1f} us'
        fact('torch.compile chain on cuda', compile_case)
    except Exception:
        say('torch.compile', 'EXCEPTION\n' + traceback.format_exc())
else:
    say('torch.compile', 'skipped: over time budget')

for t in threads:
    t.join(timeout=max(1.0, 75 - (time.time() - T0)))
print('=' * 30, 'background results', flush=True)
for label in sorted(background):
    say(label, background[label])
say('total seconds', f'{time.time() - T0:.1f}')
