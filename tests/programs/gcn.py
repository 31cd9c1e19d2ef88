"""A graph convolutional network (Kipf & Welling) as the PyTorch-Geometric-free examples write
it (pygcn: utils.py, layers.py, models.py and train.py in one file): a normalised sparse
adjacency built with SciPy and handed over as `torch.sparse_coo_tensor`, GraphConvolution
layers computing `torch.spmm(adj, input @ W)`, two layers with dropout, Adam with weight decay.
The graph is a generated 3-community stochastic block model (120 nodes) with weak bag-of-words
features, so the classes are learnt from the graph's structure. The only change to run it on
jitorch is the import line."""
import argparse
import math

import numpy as np
import scipy.sparse as sp
import jitorch as torch
import jitorch.nn as nn
import jitorch.nn.functional as F
import jitorch.optim as optim
from jitorch.nn.parameter import Parameter


def normalize_adj(mx):
    """Symmetrically normalize sparse matrix: D^-1/2 A D^-1/2."""
    rowsum = np.array(mx.sum(1))
    r_inv_sqrt = np.power(rowsum, -0.5).flatten()
    r_inv_sqrt[np.isinf(r_inv_sqrt)] = 0.
    r_mat_inv_sqrt = sp.diags(r_inv_sqrt)
    return mx.dot(r_mat_inv_sqrt).transpose().dot(r_mat_inv_sqrt).tocoo()


def normalize(mx):
    """Row-normalize sparse matrix"""
    rowsum = np.array(mx.sum(1))
    r_inv = np.power(rowsum, -1).flatten()
    r_inv[np.isinf(r_inv)] = 0.
    r_mat_inv = sp.diags(r_inv)
    return r_mat_inv.dot(mx)


def sparse_mx_to_torch_sparse_tensor(sparse_mx):
    """Convert a scipy sparse matrix to a torch sparse tensor."""
    sparse_mx = sparse_mx.tocoo().astype(np.float32)
    indices = torch.from_numpy(np.vstack((sparse_mx.row, sparse_mx.col)).astype(np.int64))
    values = torch.from_numpy(sparse_mx.data)
    shape = torch.Size(sparse_mx.shape)
    return torch.sparse_coo_tensor(indices, values, shape)


def load_data(n_per_class=40, n_classes=3, n_feat=24, seed=0):
    rng = np.random.RandomState(seed)
    labels = np.repeat(np.arange(n_classes), n_per_class)
    n = labels.size
    same = labels[:, None] == labels[None, :]
    upper = np.triu(rng.rand(n, n) < np.where(same, 0.12, 0.01), 1)
    edges = np.array(np.nonzero(upper)).T
    adj = sp.coo_matrix((np.ones(edges.shape[0]), (edges[:, 0], edges[:, 1])),
                        shape=(n, n), dtype=np.float32)
    # build symmetric adjacency matrix
    adj = adj + adj.T.multiply(adj.T > adj) - adj.multiply(adj.T > adj)
    adj = normalize_adj(adj + sp.eye(adj.shape[0]))
    # weak class signal: each class favours its own third of the words a little
    favoured = (np.arange(n_feat)[None, :] * n_classes // n_feat) == labels[:, None]
    features = sp.csr_matrix((rng.rand(n, n_feat) < np.where(favoured, 0.3, 0.2))
                             .astype(np.float32))
    features = normalize(features + sp.csr_matrix(np.full((n, n_feat), 1e-3, np.float32)))
    perm = rng.permutation(n)
    idx_train, idx_val, idx_test = perm[:24], perm[24:54], perm[54:]
    features = torch.from_numpy(np.array(features.todense(), dtype=np.float32))
    labels = torch.from_numpy(labels)
    adj = sparse_mx_to_torch_sparse_tensor(adj)
    return (adj, features, labels, torch.from_numpy(idx_train), torch.from_numpy(idx_val),
            torch.from_numpy(idx_test))


class GraphConvolution(nn.Module):
    """Simple GCN layer, similar to https://arxiv.org/abs/1609.02907"""

    def __init__(self, in_features, out_features, bias=True):
        super(GraphConvolution, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(torch.empty(in_features, out_features))
        if bias:
            self.bias = Parameter(torch.empty(out_features))
        else:
            self.register_parameter('bias', None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1. / math.sqrt(self.weight.size(1))
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        output = torch.spmm(adj, support)
        if self.bias is not None:
            return output + self.bias
        return output


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super(GCN, self).__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.gc2(x, adj)
        return F.log_softmax(x, dim=1)


def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    correct = preds.eq(labels).double()
    return (correct.sum() / len(labels)).item()


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument('--epochs', type=int, default=60, help='Number of epochs to train.')
    parser.add_argument('--lr', type=float, default=0.05, help='Initial learning rate.')
    parser.add_argument('--weight_decay', type=float, default=5e-4)
    parser.add_argument('--hidden', type=int, default=16, help='Number of hidden units.')
    parser.add_argument('--dropout', type=float, default=0.5)
    parser.add_argument('--seed', type=int, default=42, help='Random seed.')
    args = parser.parse_args(argv)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    adj, features, labels, idx_train, idx_val, idx_test = load_data()
    model = GCN(nfeat=features.shape[1], nhid=args.hidden, nclass=int(labels.max().item()) + 1,
                dropout=args.dropout)
    optimizer = optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)

    losses, val_accs = [], []
    for epoch in range(args.epochs):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        loss_train.backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            output = model(features, adj)
        losses.append(loss_train.item())
        val_accs.append(accuracy(output[idx_val], labels[idx_val]))
        if epoch % 20 == 0:
            print('Epoch: {:04d}'.format(epoch + 1), 'loss_train: {:.4f}'.format(losses[-1]),
                  'acc_val: {:.4f}'.format(val_accs[-1]))
    model.eval()
    with torch.no_grad():
        output = model(features, adj)
    acc_test = accuracy(output[idx_test], labels[idx_test])
    print("Test set results:", "accuracy= {:.4f}".format(acc_test))
    return losses, val_accs, acc_test


if __name__ == '__main__':
    main()
