"""nccl_shim.py: report a gloo job's all_reduce calls to vigil's NCCL flight recorder
(libnccl-profiler-vigil.so) the way NCCL would, so that the supervisor's hang diagnosis can be
tested end to end on a machine without a GPU: the test bed's trainer runs on gloo, which has
no profiler plugin. Each all_reduce is a Coll event (enqueued) with one GPU channel (KernelCh)
started before the call and stopped after it, through the plugin's ncclProfiler_v5 table, as
tests/unit/test_nccl_recorder.c drives it from C.

    rec = Recorder.from_env(rank, world)   # None unless NCCL_PROFILER_PLUGIN names the plugin
    h = rec.begin(numel); dist.all_reduce(t); rec.end(h)
"""
import ctypes
import os

PROFILE_COLL = 1 << 1
PROFILE_KERNEL_CH = 1 << 6
KERNEL_CH_STOP = 22


class _Coll(ctypes.Structure):
    _fields_ = [("seqNumber", ctypes.c_uint64), ("func", ctypes.c_char_p),
                ("sendBuff", ctypes.c_void_p), ("recvBuff", ctypes.c_void_p),
                ("count", ctypes.c_size_t), ("root", ctypes.c_int),
                ("datatype", ctypes.c_char_p), ("nChannels", ctypes.c_uint8),
                ("nWarps", ctypes.c_uint8), ("algo", ctypes.c_char_p),
                ("proto", ctypes.c_char_p), ("parentGroup", ctypes.c_void_p)]


class _Descr(ctypes.Structure):
    # ncclProfilerEventDescr_v5_t: type, parent, rank, then the union (coll is its largest
    # member this shim needs; KernelCh events use only type and parentObj)
    _fields_ = [("type", ctypes.c_uint64), ("parentObj", ctypes.c_void_p),
                ("rank", ctypes.c_int), ("coll", _Coll)]


_INIT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint64,
                         ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, ctypes.c_int,
                         ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
_START = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                          ctypes.POINTER(_Descr))
_STOP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
_RECORD = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
_FINALIZE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)


class _Table(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("init", _INIT), ("startEvent", _START),
                ("stopEvent", _STOP), ("recordEventState", _RECORD), ("finalize", _FINALIZE)]


class Recorder:
    def __init__(self, path, rank, world, comm_id):
        self._lib = ctypes.CDLL(path)
        self._t = _Table.in_dll(self._lib, "ncclProfiler_v5")
        self._ctx = ctypes.c_void_p()
        mask = ctypes.c_int(0)
        if self._t.init(ctypes.byref(self._ctx), comm_id, ctypes.byref(mask), b"tiny_ddp", 1,
                        world, rank, None) != 0:
            raise OSError("the recorder declined (its ring could not be made)")
        self._rank = rank
        self._seq = 0

    @classmethod
    def from_env(cls, rank, world):
        path = os.environ.get("NCCL_PROFILER_PLUGIN")
        if not path or not os.path.exists(path):
            return None
        # the same id on every rank of one attempt, as NCCL's commHash is
        comm_id = (int(os.environ.get("MASTER_PORT", "0")) << 8) + 0x5eed
        try:
            return cls(path, rank, world, comm_id)
        except OSError:
            return None

    def begin(self, numel):
        d = _Descr(type=PROFILE_COLL, rank=self._rank)
        d.coll.seqNumber = self._seq
        d.coll.func = b"AllReduce"
        d.coll.count = numel
        d.coll.datatype = b"ncclFloat32"
        d.coll.nChannels = 1
        h = ctypes.c_void_p()
        self._t.startEvent(self._ctx, ctypes.byref(h), ctypes.byref(d))
        self._t.stopEvent(h)  # NCCL's stop of a collective: enqueued
        k = _Descr(type=PROFILE_KERNEL_CH, parentObj=h)
        kh = ctypes.c_void_p()
        self._t.startEvent(self._ctx, ctypes.byref(kh), ctypes.byref(k))
        self._seq += 1
        return kh

    def end(self, kh):
        if kh:
            self._t.recordEventState(kh, KERNEL_CH_STOP, None)
            self._t.stopEvent(kh)
