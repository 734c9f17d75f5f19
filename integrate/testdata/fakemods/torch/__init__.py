"""A stand-in for torch in Preflight's check (integrate/preflight.go): a GPU is visible."""
__version__ = "0.0-fake"


class version:
    cuda = "0.0-fake"


class cuda:
    @staticmethod
    def is_available():
        return True

    @staticmethod
    def get_device_name(i):
        return "fake GPU %d" % i
