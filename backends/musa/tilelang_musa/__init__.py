"""The MUSA backend of tilelang-core: Moore Threads GPUs (mp_21, mp_22 "Quyuan", mp_31 "Pinghu")."""
__version__ = "0.2.0"
