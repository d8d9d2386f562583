"""The index of the names of torch's C++ API to the headers that define them, read from the installed torch's
headers."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.measure.cpp.api_headers import API_INCLUDE, headers_for, index, unaliased, uses_api
from harness.measure.cpp.toolchain import toolchain


@pytest.fixture(scope="module")
def torch_include() -> str:
    return toolchain().torch_include


def test_modules_options_functions_and_containers_map_to_their_headers(torch_include):
    table = index(torch_include, "nn")
    expected = {
        "Linear": "torch/nn/modules/linear.h", "LinearImpl": "torch/nn/modules/linear.h",
        "LinearOptions": "torch/nn/options/linear.h", "Conv2dOptions": "torch/nn/options/conv.h",
        "LSTM": "torch/nn/modules/rnn.h", "Sequential": "torch/nn/modules/container/sequential.h",
        "ModuleDict": "torch/nn/modules/container/moduledict.h", "Module": "torch/nn/module.h",
        "relu": "torch/nn/functional/activation.h", "cross_entropy": "torch/nn/functional/loss.h",
        "xavier_uniform_": "torch/nn/init.h", "clip_grad_norm_": "torch/nn/utils/clip_grad.h",
    }
    for name, header in expected.items():
        assert header in table[name], name
        # Every header named exists where the compiler will look for it.
        assert (Path(torch_include) / API_INCLUDE / header).is_file()
    # A forward declaration (`class Module;` in any_module_holder.h) is not a definition.
    assert table["Module"] == ("torch/nn/module.h",)
    # Names are case-sensitive: the module and the function are apart.
    assert table["ReLU"] == ("torch/nn/modules/activation.h",)
    assert "functional" not in table
    # The other scopes read their own headers; torch:: names, the headers directly under torch/.
    assert index(torch_include, "optim")["SGD"] == ("torch/optim/sgd.h",)
    assert index(torch_include, "optim")["SGDOptions"] == ("torch/optim/sgd.h",)
    assert "torch/fft.h" in index(torch_include, "fft")["fft"]
    top = index(torch_include, "")
    assert "torch/utils.h" in top["NoGradGuard"] and "torch/utils.h" in top["manual_seed"]  # `using at::manual_seed;`
    assert "Linear" not in top
    assert top["save"] == ("torch/serialize.h",)  # a function template


def test_a_statement_gets_the_headers_of_every_name_it_uses_in_order(torch_include):
    found = headers_for("torch::nn::Linear lin(4, 4);\nauto y = torch::nn::functional::relu(lin(x));\n"
                        "nn::Linear again(2, 2);", torch_include)
    assert found.headers == ["torch/nn/modules/linear.h", "torch/nn/functional/activation.h"]
    assert found.names == ["torch::nn::Linear", "torch::nn::functional::relu", "nn::Linear"]
    assert found.unresolved is None
    nested = headers_for("auto p = torch::nn::utils::rnn::pack_sequence({x});", torch_include)
    assert nested.headers == ["torch/nn/utils/rnn.h"] and nested.unresolved is None
    assert headers_for("auto y = x * 2; // no nn here, my_nn::f is not torch's", torch_include) == ([], [], None)
    assert not uses_api("auto y = x * 2; my_nn::f(); torch::relu(x);")
    optim = headers_for(
        "torch::optim::SGD opt({w}, torch::optim::SGDOptions(0.1));\ntorch::NoGradGuard g;", torch_include
    )
    assert optim.headers == ["torch/optim/sgd.h", "torch/utils.h"] and optim.unresolved is None


def test_a_name_it_cannot_resolve_is_reported(torch_include):
    assert headers_for("namespace F = torch::nn::functional;", torch_include).unresolved == "torch::nn::functional"
    # A namespace of the API named as a name: the code's names hide behind an alias.
    assert headers_for("namespace O = torch::optim;", torch_include).unresolved == "torch::optim"
    found = headers_for("torch::nn::Linear l(2, 2); torch::nn::NoSuchThing t;", torch_include)
    assert found.unresolved == "torch::nn::NoSuchThing" and found.headers == []


def test_a_namespace_alias_of_torchs_is_read_through(torch_include):
    # Declared in one section, used in others, in any spacing, with or without the leading ::.
    codes = unaliased(["namespace F = ::torch :: nn :: functional ;\nnamespace O = torch::optim;",
                       "O::SGD opt({w}, O::SGDOptions(0.1));", "auto y = F::relu(x) + my::F::g(x) + xF::h(x);"])
    assert codes == ["\n", "torch::optim::SGD opt({w}, torch::optim::SGDOptions(0.1));",
                     "auto y = torch::nn::functional::relu(x) + my::F::g(x) + xF::h(x);"]
    found = headers_for("\n".join(codes), torch_include)
    assert found.headers == ["torch/optim/sgd.h", "torch/nn/functional/activation.h"] and found.unresolved is None
    # An alias nothing uses stays (its namespace is torch/torch.h's to declare); an alias of
    # another namespace is not torch's; code without aliases is returned as it is.
    assert unaliased(["namespace F = torch::nn::functional;", "auto y = x;"]) == [
        "namespace F = torch::nn::functional;", "auto y = x;"]
    assert unaliased(["namespace G = mine::ns;", "auto y = G::f(x);"]) == [
        "namespace G = mine::ns;",
        "auto y = G::f(x);",
    ]
    plain = ["auto y = x;"]
    assert unaliased(plain) is plain
