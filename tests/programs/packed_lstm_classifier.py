"""A variable-length sequence classifier as the PyTorch NLP tutorials write it: token sequences
padded by a `collate_fn` with `pad_sequence`, embedded, packed with
`pack_padded_sequence(..., enforce_sorted=False)`, run through a bidirectional LSTM, unpacked
with `pad_packed_sequence` for a mean over each sequence's true length, and classified from that
mean and the final hidden states of both directions. The task is generated: which of the tokens
1, 2, 3 occurs most often among noise tokens, in sequences of 3 to 14 tokens. The only change to
run it on jitorch is the import line."""
import argparse

import numpy as np
import jitorch as torch
import jitorch.nn as nn
import jitorch.optim as optim
from jitorch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence
from jitorch.utils.data import DataLoader, Dataset

VOCAB, PAD = 12, 0


class MajorityDataset(Dataset):
    def __init__(self, n, seed):
        rng = np.random.RandomState(seed)
        self.items = []
        for _ in range(n):
            length = rng.randint(3, 15)
            label = rng.randint(3)
            tokens = rng.randint(4, VOCAB, size=length)  # noise tokens
            signal = rng.rand(length) < 0.6
            # the label's token is drawn twice as often as each of the other two
            tokens[signal] = 1 + rng.choice(3, size=signal.sum(), p=np.roll([0.5, 0.25, 0.25],
                                                                            label))
            counts = np.bincount(tokens, minlength=VOCAB)[1:4]
            self.items.append((tokens, int(np.argmax(counts))))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        tokens, label = self.items[i]
        return torch.from_numpy(tokens), label


def collate(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    return pad_sequence(seqs, batch_first=True, padding_value=PAD), lengths, torch.tensor(labels)


class LSTMClassifier(nn.Module):
    def __init__(self, vocab_size, embedding_dim, hidden_dim, num_classes):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=PAD)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(4 * hidden_dim, num_classes)

    def forward(self, text, lengths):
        embedded = self.embedding(text)
        packed = pack_padded_sequence(embedded, lengths.cpu(), batch_first=True,
                                      enforce_sorted=False)
        packed_output, (hidden, cell) = self.lstm(packed)
        output, output_lengths = pad_packed_sequence(packed_output, batch_first=True)
        mean = output.sum(1) / output_lengths.unsqueeze(1).to(output.dtype)
        hidden = torch.cat((hidden[-2], hidden[-1]), dim=1)
        return self.fc(torch.cat((mean, hidden), dim=1))


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for text, lengths, labels in loader:
            pred = model(text, lengths).argmax(1)
            correct += (pred == labels).sum().item()
            total += labels.size(0)
    return correct / total


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument('--epochs', type=int, default=4)
    parser.add_argument('--lr', type=float, default=0.01)
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--seed', type=int, default=1)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    train = DataLoader(MajorityDataset(384, seed=0), batch_size=args.batch_size, shuffle=True,
                       collate_fn=collate)
    test = DataLoader(MajorityDataset(192, seed=1), batch_size=64, collate_fn=collate)
    model = LSTMClassifier(VOCAB, 8, 16, 3)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    criterion = nn.CrossEntropyLoss()
    losses, accuracies = [], []
    for epoch in range(args.epochs):
        model.train()
        total = 0.0
        for text, lengths, labels in train:
            optimizer.zero_grad()
            loss = criterion(model(text, lengths), labels)
            loss.backward()
            optimizer.step()
            total += loss.item()
        losses.append(total / len(train))
        accuracies.append(evaluate(model, test))
        print(f"epoch {epoch + 1}: train loss {losses[-1]:.4f}, test accuracy "
              f"{accuracies[-1]:.3f}")
    return losses, accuracies


if __name__ == '__main__':
    main()
